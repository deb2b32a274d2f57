import { describe, expect, it } from 'vitest';

import { persistedReference, readCall, readPayload } from '../src/payload';
import { PERSISTED_RESULT, batch, card } from './fixtures';

describe('readPayload', () => {
  it('reads a batch as render.py emits it', () => {
    const payload = readPayload(batch([card(), card({ tool_use_id: 'toolu_02', status: 'error' })], 3));
    expect(payload.kind).toBe('batch');
    if (payload.kind !== 'batch') throw new Error('not a batch');
    expect(payload.batch).toBe(3);
    expect(payload.calls.map(c => [c.toolUseId, c.status])).toEqual([
      ['toolu_01', 'done'],
      ['toolu_02', 'error']
    ]);
    expect(payload.calls[0].duration).toBeCloseTo(0.25);
    expect(payload.calls[0].decision).toBeNull();
  });

  it('reads the path and size of a persisted-output block', () => {
    expect(persistedReference(PERSISTED_RESULT)).toEqual({
      size: '97.7KB',
      path: '/srv/root/work/.toolhost/sessions/s1/tool-results/toolu_02.txt'
    });
    expect(persistedReference('Output too large (1KB). Full output saved to: x')).toBeNull();
    const call = readCall(card({ result: PERSISTED_RESULT }));
    expect([call.persistedPath, call.persistedSize]).toEqual([
      '/srv/root/work/.toolhost/sessions/s1/tool-results/toolu_02.txt',
      '97.7KB'
    ]);
    expect(readCall(card({ result: PERSISTED_RESULT, persisted_path: 'given.txt' })).persistedPath).toBe('given.txt');
  });

  it('computes a missing duration from start and end', () => {
    const call = readCall(card({ duration: null, started: 10, ended: 11.5 }));
    expect(call.duration).toBeCloseTo(1.5);
  });

  it('treats wrong types as absent instead of failing', () => {
    const call = readCall({ name: 7, status: 'exploded', batch: 'x', started: 'soon', result: {} });
    expect(call).toMatchObject({ name: 'tool', status: 'queued', batch: -1, started: null, result: '' });
    expect(readPayload(null)).toEqual({ kind: 'unknown', original: null });
    expect(readPayload({ kind: 'batch', calls: 'nope' })).toMatchObject({ kind: 'batch', calls: [] });
  });

  it('reads a decision given as an object with a nested reason, or as text', () => {
    const nested = readCall(
      card({ decision: { behavior: 'allow', reason: { kind: 'rule', detail: 'rule Read(*)', source: 'projectSettings' } } })
    );
    expect(nested.decision).toEqual({ behavior: 'allow', reason: 'rule Read(*)', source: 'projectSettings' });
    const flat = readCall(card({ decision: { behavior: 'deny', reason: 'denied by hook' } }));
    expect(flat.decision).toEqual({ behavior: 'deny', reason: 'denied by hook', source: '' });
    expect(readCall(card({ decision: 'approved once by the user' })).decision?.reason).toBe(
      'approved once by the user'
    );
  });

  it('reads any kind with columns and rows as a table', () => {
    const payload = readPayload({
      version: 1,
      kind: 'tools',
      title: 'Tools',
      columns: ['name', 'read only'],
      rows: [['Read', 'yes'], ['Bash', null]]
    });
    expect(payload).toEqual({
      kind: 'table',
      table: 'tools',
      title: 'Tools',
      columns: ['name', 'read only'],
      rows: [['Read', 'yes'], ['Bash', '']]
    });
  });

  it('reads footers and notices with their defaults', () => {
    expect(
      readPayload({ kind: 'footer', tool_calls: 2, model_requests: 3, stop_reason: 'end_turn', usage: { input_tokens: 10, bad: 'x' } })
    ).toMatchObject({ kind: 'footer', toolCalls: 2, modelRequests: 3, usage: { input_tokens: 10 }, costUsd: null });
    expect(readPayload({ kind: 'notice', level: 'loud', text: 'hi' })).toEqual({
      kind: 'notice',
      level: 'info',
      text: 'hi'
    });
  });
});
