/** Payloads in the shape `jupyter_toolhost/jupyter/views/render.py` emits (`card_json`, `bundle`). */

export function card(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tool_use_id: 'toolu_01',
    name: 'Read',
    summary: 'src/app.py',
    batch: 1,
    status: 'done',
    started: 100.0,
    ended: 100.25,
    result: '     1\timport os\n     2\tprint(os.getcwd())\n',
    persisted_path: null,
    original_size: null,
    progress: null,
    duration: 0.25,
    ...overrides
  };
}

export const PERSISTED_RESULT =
  '<persisted-output>\n' +
  'Output too large (97.7KB). Full output saved to: ' +
  '/srv/root/work/.toolhost/sessions/s1/tool-results/toolu_02.txt\n\n' +
  'Preview (first 2KB):\n' +
  'line 1\nline 2...\n' +
  '</persisted-output>';

export function batch(calls: Record<string, unknown>[], number = 1): Record<string, unknown> {
  return { version: 1, kind: 'batch', batch: number, calls };
}
