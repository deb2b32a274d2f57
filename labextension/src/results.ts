/**
 * Reads persisted results through the notebook's kernel, over a comm: the front end opens
 * a comm on target `jupyter_toolhost.results` with `{path, offset, limit, encoding: 'base64'}`
 * (one chunk of a file) or `{list: true}` (the saved results of the kernel's sessions). The
 * kernel answers with one message (the list, or an error, or a chunk's header saying how
 * many pieces follow), then the chunk's bytes in base64 pieces, and closes the comm.
 *
 * Pieces keep every websocket message far under the 10 MiB a Kernel Gateway link carries
 * (a larger one is dropped there, silently for the kernel). The header tells a kernel that
 * answered from one that did not: when it came and the pieces did not, the connection lost
 * them (`CUT_OFF`), which is not the same as a busy kernel (`TIMED_OUT`).
 *
 * This works in a stock `jupyter lab` (the server's contents API hides `.toolhost/`) and
 * with remote kernels. Pure: the comm comes in as a small interface, so it is unit-tested
 * with a fake one.
 */

/** The comm target the kernel side registers. */
export const RESULTS_TARGET = 'jupyter_toolhost.results';

/** How many bytes one answer carries at most (sent in pieces of at most 1 MB). */
export const CHUNK_LIMIT = 4_000_000;

/** How long to wait for the kernel's answer. */
export const ANSWER_TIMEOUT_MS = 15_000;

/** A comm message, as far as this module reads it. */
export interface CommMessage {
  content: { data: unknown };
}

/**
 * The part of a JupyterLab comm (`IKernelConnection.createComm`) this module uses. Method
 * syntax on purpose: a real `IComm` (whose handlers take richer messages) fits it.
 */
export interface ResultComm {
  onMsg(msg: CommMessage): void | PromiseLike<void>;
  onClose(msg: CommMessage): void | PromiseLike<void>;
  open(data: ResultRequest): unknown;
  close(): unknown;
  readonly isDisposed?: boolean;
}

/** What the comm is opened with: one chunk of a file, or the list of saved results. */
export type ResultRequest =
  | { path: string; offset: number; limit: number; encoding: 'base64' }
  | { list: true };

/** Keeps a rejected future (the kernel went away) from surfacing as an unhandled rejection. */
function quiet(future: unknown): void {
  const done = (future as { done?: unknown } | null)?.done;
  if (done instanceof Promise) {
    done.catch(() => undefined);
  }
}

/** What to read. */
export interface ChunkRequest {
  path: string;
  offset: number;
  limit?: number;
}

/** One chunk of a persisted result, as the kernel read it. */
export interface ResultChunk {
  /** The file's path as it was asked for (what the next chunk is asked for with). */
  path: string;
  /**
   * The path as a person reads it, from the kernel: relative to the notebook's folder (or
   * `~`), never the machine's absolute path.
   */
  shownPath: string;
  /** Its file name (the tab title). */
  name: string;
  text: string;
  /** The size of the whole file. */
  size: number;
  offset: number;
  /** Where the next chunk starts; null at the end of the file. */
  nextOffset: number | null;
}

export const NOT_LOADED =
  'This kernel has not loaded jupyter_toolhost (run %load_ext jupyter_toolhost), ' +
  'so it cannot read the saved output.';

export const NO_KERNEL =
  'This notebook has no running kernel, so the saved output cannot be read.';

export const TIMED_OUT =
  'The kernel did not answer within 15 s; it may be busy running a cell.';

/** The message when the kernel's header came and some of its pieces did not. */
export function cutOff(received: number, expected: number): string {
  return (
    `The kernel answered, but only ${received} of ${expected} parts of the output arrived: ` +
    'the connection between the server and the kernel (a gateway) closed on the way. ' +
    'Open it again to retry.'
  );
}

type Obj = Record<string, unknown>;

const isObj = (value: unknown): value is Obj =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const int = (value: unknown): number | null =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;

/** The number of base64 pieces a chunk's header announces (null: the text is inline). */
export function piecesOf(data: unknown): number | null {
  if (!isObj(data) || data.ok !== true || data.encoding !== 'base64') {
    return null;
  }
  return int(data.pieces);
}

/** UTF-8 text from base64 pieces, in order (each piece decodes on its own). */
export function decodePieces(pieces: string[]): string {
  const decoder = new TextDecoder('utf-8');
  let text = '';
  for (const piece of pieces) {
    const binary = atob(piece);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) {
      bytes[i] = binary.charCodeAt(i);
    }
    text += decoder.decode(bytes, { stream: true });
  }
  return text + decoder.decode();
}

/** The chunk in the kernel's answer; throws an Error with the message to show otherwise. */
export function readAnswer(data: unknown, request: ChunkRequest): ResultChunk {
  if (!isObj(data)) {
    throw new Error('The kernel sent an answer this extension cannot read.');
  }
  if (data.ok !== true) {
    const error = typeof data.error === 'string' && data.error ? data.error : 'unknown error';
    throw new Error(`The kernel could not read ${request.path}: ${error}`);
  }
  if (typeof data.text !== 'string') {
    throw new Error('The kernel sent an answer without text.');
  }
  const path = typeof data.path === 'string' && data.path ? data.path : request.path;
  const name = typeof data.name === 'string' && data.name ? data.name : baseName(path);
  return {
    path,
    shownPath: typeof data.shown_path === 'string' && data.shown_path ? data.shown_path : name,
    name,
    text: data.text,
    size: int(data.size) ?? data.text.length,
    offset: int(data.offset) ?? request.offset,
    nextOffset: int(data.next_offset)
  };
}

/** One saved result of the kernel's sessions, as listed by the kernel. */
export interface SavedResult {
  /** The file's full path, as the kernel knows it (what the viewer asks for). */
  path: string;
  /** The path as a person reads it (relative to the notebook's folder or `~`). */
  shownPath: string;
  /** Its file name. */
  name: string;
  /** The session folder it belongs to ('' when the kernel did not say). */
  session: string;
  /** Its size in bytes; null when unknown. */
  size: number | null;
  /** When it was last written, in unix seconds; null when unknown. */
  modified: number | null;
}

/** The list in the kernel's answer to `{list: true}`; throws an Error with the message to show. */
export function readList(data: unknown): SavedResult[] {
  if (!isObj(data)) {
    throw new Error('The kernel sent an answer this extension cannot read.');
  }
  if (data.ok !== true) {
    const error = typeof data.error === 'string' && data.error ? data.error : 'unknown error';
    throw new Error(`The kernel could not list the saved results: ${error}`);
  }
  if (!Array.isArray(data.results)) {
    throw new Error('The kernel sent an answer without a list of results.');
  }
  const found: SavedResult[] = [];
  for (const item of data.results) {
    if (!isObj(item) || typeof item.path !== 'string' || !item.path) {
      continue;
    }
    const path = item.path;
    const name = typeof item.name === 'string' && item.name ? item.name : baseName(path);
    found.push({
      path,
      shownPath: typeof item.shown_path === 'string' && item.shown_path ? item.shown_path : name,
      name,
      session: typeof item.session === 'string' ? item.session : '',
      size: int(item.size),
      modified:
        typeof item.modified === 'number' && Number.isFinite(item.modified) ? item.modified : null
    });
  }
  return found;
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/**
 * Sends `data` over `comm` (new and unopened; it is used once) and parses the kernel's
 * answer with `parse`: its one message, or its header with the text of the base64 pieces
 * that follow (`text`). Rejects with a message to show when the kernel answers with an
 * error, closes the comm without answering (the extension is not loaded there), says
 * nothing within `timeoutMs`, or sends a header whose pieces do not all arrive.
 */
function exchange<T>(
  comm: ResultComm,
  data: ResultRequest,
  parse: (answer: unknown) => T,
  timeoutMs: number
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let header: Obj | null = null;
    let expected = 0;
    const pieces: string[] = [];
    const finish = (outcome: () => void) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        outcome();
      }
    };
    const parsed = (answer: unknown) => {
      try {
        resolve(parse(answer));
      } catch (error) {
        reject(error);
      }
    };
    const timer = setTimeout(() => {
      const message = header ? cutOff(pieces.length, expected) : TIMED_OUT;
      finish(() => reject(new Error(message)));
      try {
        if (!comm.isDisposed) {
          quiet(comm.close());
        }
      } catch {
        // the kernel may be gone: nothing left to close
      }
    }, timeoutMs);
    comm.onMsg = (msg: CommMessage) => {
      const answer = msg.content.data;
      if (header === null) {
        const count = piecesOf(answer);
        if (count === null) {
          finish(() => parsed(answer));
          return;
        }
        header = answer as Obj;
        expected = count;
      } else if (isObj(answer) && typeof answer.data === 'string') {
        pieces.push(answer.data);
      }
      if (header !== null && pieces.length >= expected) {
        const whole = { ...header, text: decodePieces(pieces) };
        finish(() => parsed(whole));
      }
    };
    comm.onClose = () =>
      finish(() =>
        reject(new Error(header ? cutOff(pieces.length, expected) : NOT_LOADED))
      );
    try {
      quiet(comm.open(data));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      finish(() => reject(new Error(`Could not ask the kernel: ${reason}`)));
    }
  });
}

/** Asks the kernel for one chunk of a saved result over `comm` (see `exchange`). */
export function requestChunk(
  comm: ResultComm,
  request: ChunkRequest,
  timeoutMs = ANSWER_TIMEOUT_MS
): Promise<ResultChunk> {
  const data = {
    path: request.path,
    offset: request.offset,
    limit: request.limit ?? CHUNK_LIMIT,
    encoding: 'base64' as const
  };
  return exchange(comm, data, answer => readAnswer(answer, request), timeoutMs);
}

/** Asks the kernel for the saved results of its sessions, newest first (see `exchange`). */
export function requestList(comm: ResultComm, timeoutMs = ANSWER_TIMEOUT_MS): Promise<SavedResult[]> {
  return exchange(comm, { list: true }, readList, timeoutMs);
}
