import { describe, expect, it } from 'vitest';

import { dirname, serverPath } from '../src/paths';

describe('serverPath', () => {
  const options = { serverRoot: '/srv/root', kernelDir: 'work/nb' };

  it('strips the server root from an absolute path under it', () => {
    expect(serverPath('/srv/root/work/.toolhost/sessions/s/tool-results/t.txt', options)).toBe(
      'work/.toolhost/sessions/s/tool-results/t.txt'
    );
    expect(serverPath('/srv/root/./a/../b.txt', options)).toBe('b.txt');
  });

  it('refuses absolute paths outside the root (including look-alike prefixes)', () => {
    expect(serverPath('/srv/rootless/x.txt', options)).toBeNull();
    expect(serverPath('/tmp/x.txt', options)).toBeNull();
    expect(serverPath('/srv/root', options)).toBeNull();
  });

  it('joins a relative path to the kernel directory (the notebook folder)', () => {
    expect(serverPath('.toolhost/sessions/s/t.txt', options)).toBe('work/nb/.toolhost/sessions/s/t.txt');
    expect(serverPath('../up.txt', options)).toBe('work/up.txt');
    expect(serverPath('../../../escape.txt', options)).toBeNull();
    expect(serverPath('t.txt', { serverRoot: '/srv/root', kernelDir: '' })).toBe('t.txt');
  });

  it('handles Windows paths case-insensitively', () => {
    expect(serverPath('C:\\Users\\me\\proj\\out.txt', { serverRoot: 'c:/users/me', kernelDir: '' })).toBe(
      'proj/out.txt'
    );
  });

  it('gives the directory of a server path', () => {
    expect(dirname('a/b/c.ipynb')).toBe('a/b');
    expect(dirname('c.ipynb')).toBe('');
  });
});
