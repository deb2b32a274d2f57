/**
 * The JSON payload of `application/vnd.jupyter.toolhost.v1+json`, as emitted by
 * `jupyter_toolhost/jupyter/views/render.py`, and a tolerant reader for it.
 *
 * Every display carries `{version: 1, kind, ...}`. The reader never throws: a field of the
 * wrong type reads as absent, so an older or newer kernel still renders what it can.
 */

/** The MIME type this extension renders. */
export const MIME_TYPE = 'application/vnd.jupyter.toolhost.v1+json';

/** States of a tool call card (render.py `CallStatus`). */
export type CallStatus =
  | 'queued'
  | 'running'
  | 'done'
  | 'error'
  | 'denied'
  | 'cancelled';

const STATUSES: ReadonlySet<string> = new Set([
  'queued',
  'running',
  'done',
  'error',
  'denied',
  'cancelled'
]);

/** The code a call ran, complete (Bash commands, kernel code). */
export interface CodeBlock {
  /** "python", "shell", ... (what to highlight it as). */
  language: string;
  source: string;
  /** Whether offering "Insert as cell below" makes sense for it. */
  insertable: boolean;
}

/** States of a checklist item (TodoWrite, Task tools). */
export type ChecklistStatus = 'pending' | 'in_progress' | 'completed';

/** One item of a checklist a call reported. */
export interface ChecklistItem {
  content: string;
  status: ChecklistStatus;
  /** What the item says while in progress ("Running the tests"), when given. */
  activeForm: string | null;
}

/** Why a call was allowed or denied (optional: older payloads do not carry it). */
export interface Decision {
  behavior: string;
  reason: string;
  source: string;
}

/** A time a call waited for a person (an approval prompt, or a question it asked). */
export interface Wait {
  asked: number;
  answered: number;
  what: string;
}

/** One tool call (render.py `card_json`). */
export interface Call {
  toolUseId: string;
  name: string;
  summary: string;
  batch: number;
  status: CallStatus;
  /** Seconds on the kernel's monotonic clock (only differences mean anything). */
  started: number | null;
  ended: number | null;
  duration: number | null;
  /** The result text (the kernel clips it to a preview). */
  result: string;
  persistedPath: string | null;
  /** Size of the full result (characters) when it was persisted. */
  originalSize: number | null;
  /** The size as the `<persisted-output>` block states it (e.g. "106.3KB"). */
  persistedSize: string | null;
  progress: string | null;
  decision: Decision | null;
  /** The result's language, when the kernel knows it (e.g. "python", "json"). */
  language: string | null;
  /** The code the call ran, complete. */
  code: CodeBlock | null;
  /** The last output lines of a running call, newest last. */
  tail: string[];
  /** Progress of a running call, 0..1, when it reports one. */
  fraction: number | null;
  /** Seconds since the call started (live payloads). */
  elapsed: number | null;
  /** Calls a sub-agent made inside this call, recursively. */
  children: Call[];
  /** The checklist this call reported. */
  checklist: ChecklistItem[] | null;
  /** How many rich outputs (plots, tables) the kernel published right below this card. */
  displaysBelow: number;
  /**
   * The status word people read: "waiting for you" while an approval prompt waits,
   * "interrupted" for a call an interrupt stopped, else the status.
   */
  label: string;
  /** Seconds the call waited for a person to decide (not part of `duration`). */
  waited: number;
  /**
   * How long it waited, by what for, as the kernel writes it ("waited 8.0 s for your
   * answer"); empty from an older kernel.
   */
  waitedText: string[];
  /**
   * What the result adds to the conversation, as the kernel writes it ("1,234 tokens",
   * "≈1,600 tokens · image 1092×1092 px"); empty while unknown or from an older kernel.
   */
  tokensText: string;
  /** The tokens were measured from the API's usage (else estimated). */
  tokensMeasured: boolean;
  /** Each wait for a person: [asked, answered] on the kernel's clock, and what it was for. */
  waits: Wait[];
  /** The marker that ends a cut result ("… 1,234 more characters"), when it is cut. */
  cut: string | null;
  /** A saved result as people read it: the path relative to the notebook, size, marker. */
  saved: Saved | null;
}

/** A saved (persisted) result, as the kernel describes it for people. */
export interface Saved {
  /** Relative to the notebook's folder where it lies inside it. */
  path: string;
  /** "106.3 KB" (KB of 1,024 bytes, as the model is told). */
  size: string;
  /** "… 19,512 more lines, 106.3 KB saved". */
  cut: string;
}

/** The result text without the `<tool_use_error>` wrapper the model reads. */
export function stripErrorTags(text: string): string {
  return text.replace(/<\/?tool_use_error>/g, '');
}

function readSaved(value: unknown): Saved | null {
  if (!isObj(value) || typeof value.path !== 'string' || !value.path) {
    return null;
  }
  return { path: value.path, size: str(value.size), cut: str(value.cut) };
}

export interface BatchPayload {
  kind: 'batch';
  batch: number;
  calls: Call[];
}

export interface LivePayload {
  kind: 'live';
  calls: Call[];
  /** The cell's latest checklist. */
  checklist: ChecklistItem[] | null;
  /** The kernel's status words ("running", "Waiting for you", "idle", ...). */
  status: string | null;
  /**
   * The status line's clock: seconds the cell ran (waits for a person left out), or, while
   * it waits, the seconds of the wait.
   */
  elapsed: number | null;
}

export interface FooterPayload {
  kind: 'footer';
  toolCalls: number;
  modelRequests: number;
  stopReason: string | null;
  usage: Record<string, number>;
  costUsd: number | null;
  duration: number | null;
  /** The footer's words, formatted and ordered by the kernel (as its text/plain has them). */
  parts: string[];
  /** Its times ("4.1 s", "waited 8.0 s for you"), formatted by the kernel. */
  times: string[];
  /** Answers came from a replay cassette: nothing was paid. */
  replayed: boolean;
  /** Where a cassette's answers come from (recording or replaying it); null without one. */
  cassette: 'recorded' | 'scripted' | null;
}

export interface NoticePayload {
  kind: 'notice';
  level: 'info' | 'warning' | 'error';
  text: string;
}

export interface TablePayload {
  kind: 'table';
  /** The kernel's own kind name (tools, rules, history, ...). */
  table: string;
  title: string;
  columns: string[];
  rows: string[][];
  /** Tables shown right below this one in the same output (`%agent cost`'s costliest calls). */
  below: TablePayload[];
}

export interface TimelinePayload {
  kind: 'timeline';
  calls: { name: string; batch: number; start: number | null; end: number | null }[];
}

/** What one thinking block shows (render.py's `thinking` module). */
export type ThinkingKind = 'text' | 'streaming' | 'redacted' | 'omitted';

export interface ThinkingBlock {
  /** text: thinking text; streaming: a block whose text has not come yet; redacted: a
   * redacted_thinking block; omitted: a block that came with a signature and no text. */
  kind: ThinkingKind;
  text: string;
}

/** The "Thinking" section of one model response, streaming (`live`) or final. */
export interface ThinkingPayload {
  kind: 'thinking';
  /** Names the section in its session: the live and the final display share it. */
  key: string;
  response: number;
  live: boolean;
  /** Characters of thinking text in the whole section (a live display may carry less). */
  characters: number;
  blocks: ThinkingBlock[];
}

const THINKING_KINDS: ReadonlySet<string> = new Set(['text', 'streaming', 'redacted', 'omitted']);

/** A thinking section's blocks; an unknown kind reads as text when it has text. */
function readThinkingBlocks(value: unknown): ThinkingBlock[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.filter(isObj).map(block => {
    const kind = str(block.kind);
    const text = str(block.text);
    return {
      kind: (THINKING_KINDS.has(kind) ? kind : text ? 'text' : 'omitted') as ThinkingKind,
      text
    };
  });
}

export interface UnknownPayload {
  kind: 'unknown';
  original: unknown;
}

export type Payload =
  | BatchPayload
  | LivePayload
  | FooterPayload
  | NoticePayload
  | TablePayload
  | TimelinePayload
  | ThinkingPayload
  | AnswerPayload
  | UnknownPayload;

/**
 * The model's text while it streams starts and ends as an empty `answer` display (the text
 * itself is Markdown in the same output, drawn by JupyterLab): nothing to draw.
 */
export interface AnswerPayload {
  kind: 'answer';
}

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  return typeof value === 'string' ? value : fallback;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function readWaits(value: unknown): Wait[] {
  const waits: Wait[] = [];
  for (const item of Array.isArray(value) ? value : []) {
    if (Array.isArray(item)) {
      const [asked, answered, what] = item;
      const a = num(asked);
      const b = num(answered);
      if (a !== null && b !== null) {
        waits.push({ asked: a, answered: b, what: str(what, 'approval') });
      }
    }
  }
  return waits;
}

function strOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function cell(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function readDecision(value: unknown): Decision | null {
  if (typeof value === 'string' && value) {
    return { behavior: '', reason: value, source: '' };
  }
  if (!isObj(value)) {
    return null;
  }
  const reason = isObj(value.reason)
    ? str(value.reason.detail)
    : str(value.reason) || str(value.message) || str(value.detail);
  const source = isObj(value.reason)
    ? str(value.reason.source)
    : str(value.source);
  const behavior = str(value.behavior);
  if (!reason && !behavior) {
    return null;
  }
  return { behavior, reason, source };
}

function readCode(value: unknown): CodeBlock | null {
  if (!isObj(value) || typeof value.source !== 'string' || !value.source) {
    return null;
  }
  return {
    language: str(value.language),
    source: value.source,
    insertable: value.insertable === true
  };
}

const CHECKLIST_STATUSES: ReadonlySet<string> = new Set(['pending', 'in_progress', 'completed']);

/** A checklist, or null when the field is absent; items that are not objects are skipped. */
export function readChecklist(value: unknown): ChecklistItem[] | null {
  if (!Array.isArray(value)) {
    return null;
  }
  return value.filter(isObj).map(item => {
    const status = str(item.status);
    return {
      content: str(item.content),
      status: (CHECKLIST_STATUSES.has(status) ? status : 'pending') as ChecklistStatus,
      activeForm: strOrNull(item.active_form)
    };
  });
}

function fraction(value: unknown): number | null {
  const n = num(value);
  return n === null ? null : Math.min(1, Math.max(0, n));
}

/** Nesting deeper than this (sub-agents of sub-agents ...) is not read. */
const MAX_DEPTH = 16;

const PERSISTED_BLOCK =
  /<persisted-output>\s*\nOutput too large \(([^)\n]*)\)\. Full output saved to: ([^\n]+)\n/;

/**
 * The size label and path stated in a `<persisted-output>` block (the text the model sees
 * instead of a large result), or null. A tool that spills its own output (Bash) reports
 * the path only there.
 */
export function persistedReference(text: string): { size: string; path: string } | null {
  const match = PERSISTED_BLOCK.exec(text);
  return match ? { size: match[1], path: match[2].trim() } : null;
}

/** One call from its JSON form; missing fields get neutral values. */
export function readCall(value: unknown, depth = 0): Call {
  const data = isObj(value) ? value : {};
  const status = str(data.status);
  const started = num(data.started);
  const ended = num(data.ended);
  let duration = num(data.duration);
  if (duration === null && started !== null && ended !== null) {
    duration = ended - started;
  }
  const result = stripErrorTags(str(data.result));
  const reference = persistedReference(result);
  const known = (STATUSES.has(status) ? status : 'queued') as CallStatus;
  return {
    toolUseId: str(data.tool_use_id),
    name: str(data.name, 'tool'),
    summary: str(data.summary),
    batch: num(data.batch) ?? -1,
    status: known,
    started,
    ended,
    duration,
    result,
    persistedPath: strOrNull(data.persisted_path) ?? reference?.path ?? null,
    originalSize: num(data.original_size),
    persistedSize: reference?.size ?? null,
    progress: strOrNull(data.progress),
    decision: readDecision(data.decision),
    language: strOrNull(data.language),
    code: readCode(data.code),
    tail: Array.isArray(data.tail)
      ? data.tail.filter((line): line is string => typeof line === 'string')
      : [],
    fraction: fraction(data.fraction),
    elapsed: num(data.elapsed),
    children: depth < MAX_DEPTH ? readCalls(data.children, depth + 1) : [],
    checklist: readChecklist(data.checklist),
    displaysBelow: Math.max(0, Math.floor(num(data.displays_below) ?? 0)),
    label: str(data.label) || known,
    waited: Math.max(0, num(data.waited) ?? 0),
    waitedText: strings(data.waited_text),
    tokensText: str(data.tokens_text),
    tokensMeasured: data.tokens_measured === true,
    waits: readWaits(data.waits),
    cut: strOrNull(data.cut),
    saved: readSaved(data.saved)
  };
}

function readCalls(value: unknown, depth = 0): Call[] {
  return Array.isArray(value) ? value.map(item => readCall(item, depth)) : [];
}

/** The payload of one display, whatever the kernel sent. */
export function readPayload(value: unknown): Payload {
  if (!isObj(value)) {
    return { kind: 'unknown', original: value };
  }
  const kind = str(value.kind);
  switch (kind) {
    case 'batch':
      return {
        kind,
        batch: num(value.batch) ?? -1,
        calls: readCalls(value.calls)
      };
    case 'live':
      return {
        kind,
        calls: readCalls(value.calls),
        checklist: readChecklist(value.checklist),
        status: strOrNull(value.status),
        elapsed: num(value.elapsed)
      };
    case 'footer': {
      const usage: Record<string, number> = {};
      if (isObj(value.usage)) {
        for (const [key, count] of Object.entries(value.usage)) {
          const n = num(count);
          if (n !== null) {
            usage[key] = n;
          }
        }
      }
      return {
        kind,
        toolCalls: num(value.tool_calls) ?? 0,
        modelRequests: num(value.model_requests) ?? 0,
        stopReason: strOrNull(value.stop_reason),
        usage,
        costUsd: num(value.cost_usd),
        duration: num(value.duration),
        parts: strings(value.parts),
        times: strings(value.times),
        replayed: value.replayed === true,
        cassette: value.cassette === 'recorded' || value.cassette === 'scripted' ? value.cassette : null
      };
    }
    case 'notice': {
      const level = str(value.level);
      return {
        kind,
        level: level === 'warning' || level === 'error' ? level : 'info',
        text: str(value.text)
      };
    }
    case 'answer':
      return { kind };
    case 'thinking': {
      const blocks = readThinkingBlocks(value.blocks);
      const counted = blocks.reduce(
        (sum, block) => sum + (block.kind === 'redacted' ? 0 : block.text.length),
        0
      );
      return {
        kind,
        key: str(value.key),
        response: num(value.response) ?? 0,
        live: value.live === true,
        characters: Math.max(0, Math.floor(num(value.characters) ?? counted)),
        blocks
      };
    }
    case 'timeline':
      return {
        kind,
        calls: (Array.isArray(value.calls) ? value.calls : []).map(item => {
          const data = isObj(item) ? item : {};
          return {
            name: str(data.name, 'tool'),
            batch: num(data.batch) ?? -1,
            start: num(data.start),
            end: num(data.end)
          };
        })
      };
    default:
      if (Array.isArray(value.columns) && Array.isArray(value.rows)) {
        return readTable(kind, value, 0);
      }
      return { kind: 'unknown', original: value };
  }
}

/** A table payload, with the tables it carries below it (at most a few levels deep). */
function readTable(kind: string, value: Record<string, unknown>, depth: number): TablePayload {
  const below = Array.isArray(value.below) && depth < MAX_DEPTH ? value.below : [];
  return {
    kind: 'table',
    table: kind,
    title: str(value.title),
    columns: Array.isArray(value.columns) ? value.columns.map(cell) : [],
    rows: Array.isArray(value.rows)
      ? value.rows.map(row => (Array.isArray(row) ? row.map(cell) : [cell(row)]))
      : [],
    below: below.filter(isObj).map(item => readTable(str(item.kind), item, depth + 1))
  };
}
