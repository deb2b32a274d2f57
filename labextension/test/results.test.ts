import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  CHUNK_LIMIT,
  type CommMessage,
  NOT_LOADED,
  type ResultChunk,
  type ResultComm,
  type ResultRequest,
  TIMED_OUT,
  cutOff,
  readList,
  requestChunk,
  requestList
} from '../src/results';
import { ResultView } from '../src/viewer';

/** A comm that answers as the kernel would (or not), after `open`. */
class FakeComm implements ResultComm {
  opened: unknown[] = [];
  closed = 0;
  isDisposed = false;
  constructor(private readonly _kernel: (comm: FakeComm, data: unknown) => void) {}
  onMsg(_msg: CommMessage): void {}
  onClose(_msg: CommMessage): void {}
  open(data: ResultRequest) {
    this.opened.push(data);
    queueMicrotask(() => this._kernel(this, data));
    return { done: Promise.reject(new Error('kernel went away')) };
  }
  close() {
    this.closed += 1;
    this.isDisposed = true;
    void this.onClose({ content: { data: {} } });
  }
  /** What the kernel does to end the exchange. */
  kernelCloses() {
    this.isDisposed = true;
    void this.onClose({ content: { data: {} } });
  }
}

const PATH = '/work/.toolhost/sessions/s1/tool-results/toolu_02.txt';

describe('reading a persisted result through the kernel', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('opens the comm with path, offset and limit, and resolves with the answer', async () => {
    const comm = new FakeComm(c => {
      void c.onMsg({
        content: {
          data: { ok: true, path: PATH, shown_path: 'rel/toolu_02.txt', name: 'toolu_02.txt', text: 'line 1\n', size: 12, offset: 0, next_offset: 7 }
        }
      });
      c.kernelCloses();
    });
    const chunk = await requestChunk(comm, { path: 'rel/toolu_02.txt', offset: 0 });
    expect(comm.opened).toEqual([
      { path: 'rel/toolu_02.txt', offset: 0, limit: CHUNK_LIMIT, encoding: 'base64' }
    ]);
    expect(chunk).toEqual({ path: PATH, shownPath: 'rel/toolu_02.txt', name: 'toolu_02.txt', text: 'line 1\n', size: 12, offset: 0, nextOffset: 7 });
  });

  it('reads a last chunk (next_offset null) and fills in a missing name', async () => {
    const comm = new FakeComm(c => void c.onMsg({ content: { data: { ok: true, path: PATH, text: 'x', size: 1, offset: 0, next_offset: null } } }));
    const chunk = await requestChunk(comm, { path: PATH, offset: 0, limit: 10 });
    expect(comm.opened).toEqual([{ path: PATH, offset: 0, limit: 10, encoding: 'base64' }]);
    expect([chunk.name, chunk.nextOffset]).toEqual(['toolu_02.txt', null]);
  });

  it("rejects with the kernel's error", async () => {
    const comm = new FakeComm(c => {
      void c.onMsg({ content: { data: { ok: false, error: 'No such file' } } });
      c.kernelCloses();
    });
    await expect(requestChunk(comm, { path: 'gone.txt', offset: 0 })).rejects.toThrow(
      'The kernel could not read gone.txt: No such file'
    );
  });

  it('rejects an answer it cannot read', async () => {
    const comm = new FakeComm(c => void c.onMsg({ content: { data: 'hello' } }));
    await expect(requestChunk(comm, { path: 'x', offset: 0 })).rejects.toThrow('cannot read');
  });

  it('says the extension is not loaded when the comm closes without an answer', async () => {
    const comm = new FakeComm(c => c.kernelCloses());
    await expect(requestChunk(comm, { path: 'x', offset: 0 })).rejects.toThrow(NOT_LOADED);
    expect(NOT_LOADED).toContain('%load_ext jupyter_toolhost');
  });

  it('times out after 15 s and closes the comm', async () => {
    vi.useFakeTimers();
    const comm = new FakeComm(() => undefined);
    const answer = requestChunk(comm, { path: 'x', offset: 0 });
    const settled = vi.fn();
    answer.catch(settled);
    await vi.advanceTimersByTimeAsync(14_999);
    expect(settled).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    await expect(answer).rejects.toThrow(TIMED_OUT);
    expect(TIMED_OUT).toBe('The kernel did not answer within 15 s; it may be busy running a cell.');
    expect(comm.closed).toBe(1);
  });

  it('rejects when the comm cannot be opened', async () => {
    const comm = new FakeComm(() => undefined);
    comm.open = () => {
      throw new Error('Kernel is dead');
    };
    await expect(requestChunk(comm, { path: 'x', offset: 0 })).rejects.toThrow('Could not ask the kernel: Kernel is dead');
  });
});

/** The kernel's messages for `text` sent as base64 pieces of `pieceBytes` bytes. */
function piecesFor(text: string, pieceBytes: number): unknown[] {
  const bytes = new TextEncoder().encode(text);
  const pieces: unknown[] = [];
  for (let at = 0, index = 0; at < bytes.length; at += pieceBytes, index++) {
    const slice = bytes.slice(at, at + pieceBytes);
    pieces.push({ piece: index, data: btoa(String.fromCharCode(...slice)) });
  }
  const header = {
    ok: true, path: PATH, name: 'toolu_02.txt', size: bytes.length, offset: 0,
    next_offset: null, encoding: 'base64', pieces: pieces.length
  };
  return [header, ...pieces];
}

describe('a chunk sent in base64 pieces (kept under a gateway\'s frame limit)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('joins the pieces, a character split between two of them included', async () => {
    const text = 'naïve 😀 ' + '\u0000\u0001"\\'.repeat(50) + ' end 😀';
    const messages = piecesFor(text, 7);
    expect(messages.length).toBeGreaterThan(10);
    const comm = new FakeComm(c => {
      for (const data of messages) {
        void c.onMsg({ content: { data } });
      }
      c.kernelCloses();
    });
    const chunk = await requestChunk(comm, { path: PATH, offset: 0 });
    expect(chunk.text).toBe(text);
    expect(chunk.nextOffset).toBeNull();
  });

  it('says the connection lost the rest when the comm closes after some pieces', async () => {
    const messages = piecesFor('x'.repeat(30), 10);
    const comm = new FakeComm(c => {
      void c.onMsg({ content: { data: messages[0] } });
      void c.onMsg({ content: { data: messages[1] } });
      c.kernelCloses();
    });
    await expect(requestChunk(comm, { path: PATH, offset: 0 })).rejects.toThrow(cutOff(1, 3));
    expect(cutOff(1, 3)).toContain('the connection between the server and the kernel (a gateway) closed');
  });

  it('says so too when the pieces stop coming, rather than blaming a busy kernel', async () => {
    vi.useFakeTimers();
    const messages = piecesFor('y'.repeat(20), 10);
    const comm = new FakeComm(c => void c.onMsg({ content: { data: messages[0] } }));
    const answer = requestChunk(comm, { path: PATH, offset: 0 });
    answer.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(15_000);
    await expect(answer).rejects.toThrow(cutOff(0, 2));
    await expect(answer).rejects.not.toThrow(TIMED_OUT);
  });
});

describe('listing the saved results through the kernel', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const listed = [
    { path: PATH, shown_path: '.toolhost/sessions/s1/tool-results/toolu_02.txt', name: 'toolu_02.txt', session: 's1', size: 97_700, modified: 1_764_727_920.5 },
    { path: '/work/.toolhost/sessions/s0/tool-results/toolu_01.txt', shown_path: '~/s0/toolu_01.txt', name: 'toolu_01.txt', session: 's0', size: 12, modified: 1_764_700_000 }
  ];

  it('opens the comm with {list: true} and resolves with the results, in order', async () => {
    const comm = new FakeComm(c => {
      void c.onMsg({ content: { data: { ok: true, results: listed } } });
      c.kernelCloses();
    });
    const results = await requestList(comm);
    expect(comm.opened).toEqual([{ list: true }]);
    expect(results).toEqual(listed.map(({ shown_path, ...rest }) => ({ ...rest, shownPath: shown_path })));
  });

  it('resolves with an empty list', async () => {
    const comm = new FakeComm(c => void c.onMsg({ content: { data: { ok: true, results: [] } } }));
    await expect(requestList(comm)).resolves.toEqual([]);
  });

  it("rejects with the kernel's error", async () => {
    const comm = new FakeComm(c => {
      void c.onMsg({ content: { data: { ok: false, error: 'Permission denied' } } });
      c.kernelCloses();
    });
    await expect(requestList(comm)).rejects.toThrow('The kernel could not list the saved results: Permission denied');
  });

  it('says the extension is not loaded when the comm closes without an answer', async () => {
    const comm = new FakeComm(c => c.kernelCloses());
    await expect(requestList(comm)).rejects.toThrow(NOT_LOADED);
    expect(comm.opened).toEqual([{ list: true }]);
  });

  it('times out after 15 s and closes the comm', async () => {
    vi.useFakeTimers();
    const comm = new FakeComm(() => undefined);
    const answer = requestList(comm);
    answer.catch(() => undefined);
    await vi.advanceTimersByTimeAsync(15_000);
    await expect(answer).rejects.toThrow(TIMED_OUT);
    expect(comm.closed).toBe(1);
  });

  it('skips entries without a path and fills in what is missing', () => {
    const results = readList({
      ok: true,
      results: [
        'nonsense',
        { name: 'no-path.txt' },
        { path: 'C:\\work\\.toolhost\\sessions\\s2\\tool-results\\toolu_03.txt', size: -1, modified: 'yesterday' }
      ]
    });
    expect(results).toEqual([
      { path: 'C:\\work\\.toolhost\\sessions\\s2\\tool-results\\toolu_03.txt', shownPath: 'toolu_03.txt', name: 'toolu_03.txt', session: '', size: null, modified: null }
    ]);
  });

  it('rejects an answer without a list', () => {
    expect(() => readList({ ok: true })).toThrow('without a list');
    expect(() => readList(null)).toThrow('cannot read');
  });
});

describe('the saved output viewer', () => {
  const first: ResultChunk = { path: PATH, shownPath: '.toolhost/sessions/s1/tool-results/toolu_02.txt', name: 'toolu_02.txt', text: 'a\nb\n', size: 2_500, offset: 0, nextOffset: 4 };

  it('shows path, size and read-only above the text, and loads more on demand', async () => {
    const read = vi.fn(async (offset: number): Promise<ResultChunk> => ({
      ...first,
      text: 'c\n',
      offset,
      nextOffset: null
    }));
    const view = new ResultView(first, read);
    document.body.replaceChildren(view.node);
    const header = view.node.querySelector('.jp-ToolhostResultViewer-header');
    // 2,500 bytes are 2.4 KB of 1,024 bytes, as the cards and the model are told sizes.
    // The path a person reads (the kernel's, relative), never the machine's absolute one.
    expect(header?.textContent).toBe('.toolhost/sessions/s1/tool-results/toolu_02.txt2.4 KBread-only');
    const text = view.node.querySelector('pre.jp-ToolhostResultViewer-text');
    expect(text?.textContent).toBe('a\nb\n');
    const more = view.node.querySelector<HTMLElement>('.jp-ToolhostResultViewer-more');
    expect(more?.hidden).toBe(false);
    const button = view.node.querySelector<HTMLButtonElement>('.jp-ToolhostResultViewer-loadMore');
    expect(button?.textContent).toBe('Load more');
    button?.click();
    await vi.waitFor(() => expect(text?.textContent).toBe('a\nb\nc\n'));
    expect(read).toHaveBeenCalledWith(4);
    expect(more?.hidden).toBe(true);
    expect(view.nextOffset).toBeNull();
  });

  it('says why loading more failed', async () => {
    const view = new ResultView(first, async () => {
      throw new Error('The kernel did not answer within 15 s; it may be busy running a cell.');
    });
    document.body.replaceChildren(view.node);
    view.node.querySelector<HTMLButtonElement>('.jp-ToolhostResultViewer-loadMore')?.click();
    await vi.waitFor(() =>
      expect(view.node.querySelector('.jp-ToolhostResultViewer-status')?.textContent).toContain('did not answer')
    );
  });
});
