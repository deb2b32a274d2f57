import { describe, expect, it } from 'vitest';

import {
  batchSpan,
  formatChars,
  formatDuration,
  formatElapsed,
  formatNumber,
  formatPercent,
  formatWithin,
  guessLanguage,
  languageOfPath,
  persistedPreview,
  splitNumbered,
  totalDuration
} from '../src/format';
import type { NumberUnit } from '../src/format';
import { readCall } from '../src/payload';
import NUMBER_CASES from './number-cases.json';
import { PERSISTED_RESULT, card } from './fixtures';

describe('format', () => {
  it('formats durations at three scales and hides unknown ones', () => {
    expect(formatDuration(0.0424)).toBe('42 ms');
    expect(formatDuration(1.234)).toBe('1.2 s');
    expect(formatDuration(42.25)).toBe('42.3 s');
    expect(formatDuration(125)).toBe('2 min 05 s');
    expect(formatDuration(null)).toBe('');
    expect(formatDuration(-1)).toBe('');
  });

  it('formats elapsed time in whole seconds, percentages and the span a call ran in', () => {
    expect(formatElapsed(3.7)).toBe('3 s');
    expect(formatElapsed(65)).toBe('1 min 05 s');
    expect(formatElapsed(600)).toBe('10 min 00 s');
    expect(formatElapsed(null)).toBe('');
    expect(formatPercent(0.425)).toBe('43%');
    expect(formatWithin(0, 0.41, 0.41)).toBe('0.00–0.41 s of 0.41 s');
    expect(formatWithin(2, 12.25, 30)).toBe('2.0–12.3 s of 30.0 s');
  });

  it('formats character counts', () => {
    expect(formatChars(999)).toBe('999 characters');
    expect(formatChars(100_000)).toBe('100,000 characters');
  });

  it('writes every number as the kernel does (the table both are checked against)', () => {
    for (const { value, unit, text } of NUMBER_CASES.cases) {
      expect(formatNumber(value, unit as NumberUnit), `${unit} ${value}`).toBe(text);
    }
    const units = new Set(NUMBER_CASES.cases.map(c => c.unit));
    expect([...units].sort()).toEqual(['bytes', 'clock', 'count', 'percent', 'seconds', 'tokens', 'usd']);
  });

  it('measures a batch as wall time and as summed work', () => {
    const calls = [
      readCall(card({ started: 10, ended: 11, duration: 1 })),
      readCall(card({ started: 10.5, ended: 12, duration: 1.5 }))
    ];
    expect(batchSpan(calls)).toBeCloseTo(2);
    expect(totalDuration(calls)).toBeCloseTo(2.5);
    expect(batchSpan([readCall(card({ started: null, ended: null }))])).toBeNull();
  });

  it('guesses the language: kernel hint first, then JSON, then a file name in the summary', () => {
    expect(guessLanguage(readCall(card({ language: 'rust' })), 'fn main() {}')).toBe('rust');
    expect(guessLanguage(readCall(card({ summary: 'ls' })), '{"a": [1, 2]}')).toBe('json');
    expect(guessLanguage(readCall(card({ summary: 'ls' })), '{not json}')).toBeNull();
    expect(guessLanguage(readCall(card({ summary: 'notes/a.md (lines 1-20)' })), '# hi')).toBe('markdown');
    expect(guessLanguage(readCall(card({ summary: 'echo hello' })), 'hello')).toBeNull();
    expect(languageOfPath('Makefile')).toBeNull();
    expect(languageOfPath('x.PY')).toBe('python');
  });

  it('splits cat -n output into numbers and code, and refuses anything else', () => {
    expect(splitNumbered('     1\timport os\n     2\t\n     3\tx = 1\n')).toEqual({
      numbers: ['1', '2', '3'],
      code: 'import os\n\nx = 1'
    });
    expect(splitNumbered('plain text\n     2\tx')).toBeNull();
    expect(splitNumbered('')).toBeNull();
  });

  it('takes the preview out of a persisted-output block', () => {
    expect(persistedPreview(PERSISTED_RESULT)).toBe('line 1\nline 2...');
    expect(persistedPreview('just text')).toBe('just text');
    expect(persistedPreview(`${PERSISTED_RESULT}\nstderr:\noops`)).toBe('line 1\nline 2...');
  });
});
