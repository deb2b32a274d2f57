/**
 * Small pure helpers for the cards: durations, sizes, status labels, and guessing a
 * result's language so it can be highlighted.
 */

import type { Call, CallStatus } from './payload';

/** A short glyph per status (same marks as the kernel's text/plain). */
export const STATUS_MARK: Record<CallStatus, string> = {
  queued: '…',
  running: '▶',
  done: '✓',
  error: '✗',
  denied: '⊘',
  cancelled: '■'
};

/** The kinds of number a person reads (the kernel's `core.numbers.Unit`). */
export type NumberUnit = 'count' | 'tokens' | 'usd' | 'bytes' | 'seconds' | 'clock' | 'percent';

/**
 * Every number shown to a person, written as the kernel's `format_number` writes it (both
 * are checked against test/number-cases.json): "27,498", "$0.0123", "106.3 KB", "85 ms",
 * "1.2 s", "1 min 05 s", "3 s" (a clock), "42%". Halves round up, as in the kernel.
 */
export function formatNumber(value: number, unit: NumberUnit = 'count'): string {
  switch (unit) {
    case 'count':
    case 'tokens':
      return fixed(value, 0);
    case 'usd':
      return `$${fixed(value, 4)}`;
    case 'bytes':
      return bytes(value);
    case 'seconds':
      return seconds(value);
    case 'clock': {
      const whole = Math.max(0, Math.floor(value));
      return whole < 60 ? `${whole} s` : minutesAndSeconds(whole);
    }
    case 'percent':
      return `${fixed(value * 100, 0)}%`;
  }
}

/** `value` to `places` decimals, halves up, with thousands separators. */
function fixed(value: number, places: number): string {
  const scale = 10 ** places;
  const scaled = Math.floor(Math.abs(value) * scale + 0.5);
  const whole = Math.floor(scaled / scale);
  const fraction = scaled - whole * scale;
  const sign = value < 0 && scaled ? '-' : '';
  const digits = String(whole).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return sign + digits + (places ? `.${String(fraction).padStart(places, '0')}` : '');
}

function bytes(size: number): string {
  if (size < 1024) {
    return `${fixed(size, 0)} B`;
  }
  for (const [power, unit] of [[1, 'KB'], [2, 'MB']] as const) {
    const scaled = size / 1024 ** power;
    if (Number(fixed(scaled, 1).replace(/,/g, '')) < 1024) {
      return `${fixed(scaled, 1)} ${unit}`;
    }
  }
  return `${fixed(size / 1024 ** 3, 1)} GB`;
}

function seconds(value: number): string {
  const s = Math.max(0, value);
  if (Math.floor(s * 1000 + 0.5) < 1000) {
    return `${fixed(s * 1000, 0)} ms`;
  }
  if (Math.floor(s * 10 + 0.5) < 600) {
    return `${fixed(s, 1)} s`;
  }
  return minutesAndSeconds(Math.floor(s + 0.5));
}

function minutesAndSeconds(whole: number): string {
  const minutes = Math.floor(whole / 60);
  return `${minutes} min ${String(whole - minutes * 60).padStart(2, '0')} s`;
}

function known(value: number | null): value is number {
  return value !== null && Number.isFinite(value) && value >= 0;
}

/** A duration ("850 ms", "1.2 s", "2 min 05 s"); empty for an unknown one. */
export function formatDuration(value: number | null): string {
  return known(value) ? formatNumber(value, 'seconds') : '';
}

/** A running clock in whole seconds: "3 s", "1 min 05 s"; empty when unknown. */
export function formatElapsed(value: number | null): string {
  return known(value) ? formatNumber(value, 'clock') : '';
}

/** When a call ran within its batch: "0.00–0.41 s of 0.41 s" (seconds from the batch's start). */
export function formatWithin(start: number, end: number, span: number): string {
  const digits = span < 10 ? 2 : 1;
  const s = (value: number) => Math.max(0, value).toFixed(digits);
  return `${s(start)}–${s(end)} s of ${s(span)} s`;
}

/** "42%" for a fraction 0..1. */
export function formatPercent(fraction: number): string {
  return formatNumber(fraction, 'percent');
}

/** "512 characters", "12,345 characters": sizes the kernel reports in characters. */
export function formatChars(count: number): string {
  return `${formatNumber(count)} characters`;
}

/**
 * "512 B", "106.3 KB", "4.2 MB": a file's size, in KB of 1,024 bytes (and MB of 1,024 KB),
 * as the kernel's cards and the `<persisted-output>` block the model reads write it.
 */
export function formatSize(size: number): string {
  return formatNumber(size, 'bytes');
}

/** Wall time of a batch: from its first start to its last end. */
export function batchSpan(calls: Call[]): number | null {
  const starts = calls.map(c => c.started).filter((v): v is number => v !== null);
  const ends = calls.map(c => c.ended).filter((v): v is number => v !== null);
  if (!starts.length || !ends.length) {
    return null;
  }
  return Math.max(...ends) - Math.min(...starts);
}

/** Sum of the calls' own durations (what running them one by one would have taken). */
export function totalDuration(calls: Call[]): number | null {
  const known = calls.map(c => c.duration).filter((v): v is number => v !== null);
  return known.length ? known.reduce((a, b) => a + b, 0) : null;
}

const EXTENSIONS: Record<string, string> = {
  py: 'python',
  pyi: 'python',
  ipynb: 'json',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  ts: 'typescript',
  tsx: 'typescript',
  json: 'json',
  md: 'markdown',
  markdown: 'markdown',
  html: 'html',
  htm: 'html',
  css: 'css',
  sh: 'shell',
  bash: 'shell',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'toml',
  rs: 'rust',
  go: 'go',
  java: 'java',
  c: 'c',
  h: 'c',
  cpp: 'cpp',
  hpp: 'cpp',
  sql: 'sql',
  xml: 'xml',
  r: 'r',
  jl: 'julia'
};

/** The language of a file name's extension, or null. */
export function languageOfPath(path: string): string | null {
  const match = /\.([A-Za-z0-9]+)$/.exec(path.trim());
  return match ? (EXTENSIONS[match[1].toLowerCase()] ?? null) : null;
}

/**
 * The language to highlight a call's result in: the kernel's `language` when given, else
 * JSON when the text parses as an object or array, else the extension of a file name in
 * the call's summary. Null means plain text.
 */
export function guessLanguage(call: Call, code: string): string | null {
  if (call.language) {
    return call.language;
  }
  const trimmed = code.trim();
  if (/^[[{]/.test(trimmed) && /[\]}]$/.test(trimmed)) {
    try {
      JSON.parse(trimmed);
      return 'json';
    } catch {
      // not JSON: fall through
    }
  }
  for (const token of call.summary.split(/\s+/)) {
    const language = languageOfPath(token.replace(/[,:;)"']+$/, ''));
    if (language) {
      return language;
    }
  }
  return null;
}

/** A result in `cat -n` form split into line numbers and code, so only code is highlighted. */
export interface Numbered {
  numbers: string[];
  code: string;
}

const NUMBERED_LINE = /^\s*(\d+)\t(.*)$/;

/** The `cat -n` form of `text`, or null when not every non-empty line is numbered. */
export function splitNumbered(text: string): Numbered | null {
  const lines = text.replace(/\n$/, '').split('\n');
  if (lines.length === 0 || (lines.length === 1 && !lines[0])) {
    return null;
  }
  const numbers: string[] = [];
  const code: string[] = [];
  for (const line of lines) {
    const match = NUMBERED_LINE.exec(line);
    if (!match) {
      return null;
    }
    numbers.push(match[1]);
    code.push(match[2]);
  }
  return { numbers, code: code.join('\n') };
}

/**
 * The preview part of a `<persisted-output>` block (the kernel shows the model a size,
 * the path and a preview); the text itself when it is not such a block.
 */
export function persistedPreview(result: string): string {
  const marker = result.indexOf('Preview (first');
  if (marker < 0) {
    return result;
  }
  const start = result.indexOf('\n', marker);
  if (start < 0) {
    return '';
  }
  const end = result.indexOf('</persisted-output>', start);
  return result.slice(start + 1, end < 0 ? undefined : end).replace(/\n+$/, '');
}
