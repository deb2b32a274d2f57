import { describe, expect, it, vi } from 'vitest';

import { dirname, serverShowsSessions } from '../src/paths';

describe('dirname', () => {
  it('gives the directory of a server path', () => {
    expect(dirname('a/b/c.ipynb')).toBe('a/b');
    expect(dirname('c.ipynb')).toBe('');
  });
});

describe('whether the server shows the sessions folder', () => {
  /** A contents API over `dirs` (a directory's path → its listed children). */
  const contents = (dirs: Record<string, string[]>) => {
    const asked: string[] = [];
    const get = vi.fn(async (path: string) => {
      asked.push(path);
      const children = dirs[path];
      if (!children) {
        throw new Error('404');
      }
      return { content: children.map(name => ({ name, type: name.includes('.ipynb') ? 'notebook' : 'directory' })) };
    });
    return { api: { get } as unknown as Parameters<typeof serverShowsSessions>[0], asked };
  };

  it('lists each parent and finds .toolhost/sessions', async () => {
    const { api, asked } = contents({ work: ['a.ipynb', '.toolhost'], 'work/.toolhost': ['sessions'] });
    await expect(serverShowsSessions(api, 'work')).resolves.toBe(true);
    expect(asked).toEqual(['work', 'work/.toolhost']);
  });

  it('says no when a stock server leaves the dot-folder out, without asking for it', async () => {
    const { api, asked } = contents({ '': ['a.ipynb'] });
    await expect(serverShowsSessions(api, '')).resolves.toBe(false);
    expect(asked).toEqual(['']);
  });

  it('says no when there is no sessions folder yet, or the server fails', async () => {
    await expect(serverShowsSessions(contents({ '': ['.toolhost'], '.toolhost': [] }).api, '')).resolves.toBe(false);
    await expect(serverShowsSessions(contents({}).api, 'x')).resolves.toBe(false);
  });
});
