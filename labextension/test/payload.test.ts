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
      rows: [['Read', 'yes'], ['Bash', '']],
      below: []
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

  it('reads code, tail, progress, elapsed, displays below and a checklist of a call', () => {
    const call = readCall(
      card({
        code: { language: 'python', source: 'import os\nos.getcwd()', insertable: true },
        tail: ['a', 7, 'b'],
        fraction: 0.25,
        elapsed: 3.5,
        displays_below: 2,
        checklist: [
          { content: 'Read the data', status: 'completed', active_form: 'Reading the data' },
          { content: 'Plot it', status: 'in_progress', active_form: 'Plotting it' },
          { content: 'Write it up', status: 'someday' },
          'not an item'
        ]
      })
    );
    expect(call.code).toEqual({ language: 'python', source: 'import os\nos.getcwd()', insertable: true });
    expect(call.tail).toEqual(['a', 'b']);
    expect([call.fraction, call.elapsed, call.displaysBelow]).toEqual([0.25, 3.5, 2]);
    expect(call.checklist).toEqual([
      { content: 'Read the data', status: 'completed', activeForm: 'Reading the data' },
      { content: 'Plot it', status: 'in_progress', activeForm: 'Plotting it' },
      { content: 'Write it up', status: 'pending', activeForm: null }
    ]);
  });

  it('reads sub-agent calls recursively', () => {
    const call = readCall(
      card({ name: 'Agent', children: [card({ tool_use_id: 'c1', children: [card({ tool_use_id: 'c2' })] }), 'junk'] })
    );
    expect(call.children.map(c => c.toolUseId)).toEqual(['c1', '']);
    expect(call.children[0].children[0].toolUseId).toBe('c2');
    expect(call.children[1]).toMatchObject({ name: 'tool', status: 'queued' });
  });

  it('reads old payloads and wrong types of the new fields as absent', () => {
    const old = readCall(card());
    expect(old).toMatchObject({ code: null, tail: [], fraction: null, elapsed: null, children: [], checklist: null, displaysBelow: 0 });
    const wrong = readCall(
      card({ code: { source: 5 }, tail: 'x', fraction: 'half', elapsed: '3', children: {}, checklist: 'todo', displays_below: -3 })
    );
    expect(wrong).toMatchObject({ code: null, tail: [], fraction: null, elapsed: null, children: [], checklist: null, displaysBelow: 0 });
    expect(readCall(card({ code: { source: 'ls' } })).code).toEqual({ language: '', source: 'ls', insertable: false });
    expect(readCall(card({ fraction: 1.5 })).fraction).toBe(1);
  });

  it('reads the checklist, status and elapsed time of a live payload, and a replayed footer', () => {
    const live = readPayload({ kind: 'live', calls: [], status: 'running', elapsed: 12, checklist: [{ content: 'x', status: 'pending' }] });
    expect(live).toMatchObject({ kind: 'live', status: 'running', elapsed: 12, checklist: [{ content: 'x', status: 'pending', activeForm: null }] });
    expect(readPayload({ kind: 'live', calls: [] })).toMatchObject({ checklist: null, status: null, elapsed: null });
    expect(readPayload({ kind: 'footer', tool_calls: 1, replayed: true })).toMatchObject({ replayed: true });
    expect(readPayload({ kind: 'footer', tool_calls: 1, replayed: 'yes' })).toMatchObject({ replayed: false });
    expect(readPayload({ kind: 'footer', tool_calls: 1, cassette: 'scripted' })).toMatchObject({ cassette: 'scripted' });
    expect(readPayload({ kind: 'footer', tool_calls: 1, cassette: 'live' })).toMatchObject({ cassette: null });
  });
});
