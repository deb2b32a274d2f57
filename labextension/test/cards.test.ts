import { describe, expect, it, vi } from 'vitest';

import { type RenderContext, isOpen, keepChoices, renderPayload, setView } from '../src/cards';
import { readPayload } from '../src/payload';
import { PERSISTED_RESULT, batch, card } from './fixtures';

function render(data: unknown, context: Partial<RenderContext> = {}) {
  const rendered = renderPayload(readPayload(data), { view: 'compact', ...context });
  document.body.replaceChildren(rendered.node);
  return rendered;
}

const q = <T extends Element = HTMLElement>(selector: string, root: ParentNode = document) =>
  root.querySelector<T & Element>(selector) as T;
const qa = (selector: string, root: ParentNode = document) =>
  Array.from(root.querySelectorAll<HTMLElement>(selector));

describe('tool call cards', () => {
  it('shows status, name, summary, duration and decision in the header', () => {
    render(
      batch([
        card({ decision: { behavior: 'allow', reason: { detail: 'matched rule Read(src/**)', source: 'projectSettings' } } })
      ])
    );
    const header = q('.jp-Toolhost-cardHeader');
    expect(q('.jp-Toolhost-statusMark', header).textContent).toBe('✓');
    expect(q('.jp-Toolhost-name', header).textContent).toBe('Read');
    expect(q('.jp-Toolhost-summary', header).textContent).toBe('src/app.py');
    expect(q('.jp-Toolhost-duration', header).textContent).toBe('250 ms');
    expect(q('.jp-Toolhost-badgeDecision', header).textContent).toBe('allowed');
    expect(q('.jp-Toolhost-decision').textContent).toBe(
      'Why: matched rule Read(src/**) (projectSettings)'
    );
    expect(q('.jp-Toolhost-card').dataset.status).toBe('done');
    // a single call is not a group
    expect(q('.jp-Toolhost-batchHeader')).toBeNull();
  });

  it('draws a wait for a person on its bar as a wait, not as the call running', () => {
    render(
      batch(
        [
          card({ tool_use_id: 'a', started: 0, ended: 10, duration: 2, waited: 8, waits: [[1, 9, 'your answer']] }),
          card({ tool_use_id: 'b', started: 0, ended: 1, duration: 1 })
        ],
        1
      )
    );
    const [wait] = qa('.jp-Toolhost-timingWait');
    expect([wait.style.left, wait.style.width]).toEqual(['10%', '80%']);
    expect(wait.dataset.what).toBe('your answer');
    expect(wait.title).toBe('waited 8.0 s for your answer');
    expect(qa('.jp-Toolhost-timingWait')).toHaveLength(1);
  });

  it('groups concurrent calls with wall time and a bar per call', () => {
    render(
      batch(
        [
          card({ tool_use_id: 'a', started: 0, ended: 1, duration: 1 }),
          card({ tool_use_id: 'b', started: 0, ended: 0.5, duration: 0.5 }),
          card({ tool_use_id: 'c', started: 0.5, ended: 1, duration: 0.5 })
        ],
        2
      )
    );
    expect(q('.jp-Toolhost-batch').classList.contains('jp-mod-concurrent')).toBe(true);
    expect(q('.jp-Toolhost-batchLabel').textContent).toBe('Batch 2 · 3 calls ran concurrently');
    expect(q('.jp-Toolhost-batchTiming').textContent).toBe('1.0 s wall · 2.0 s of work');
    expect(qa('.jp-Toolhost-timingLabel').map(l => l.textContent)).toEqual([
      '0.00–1.00 s of 1.00 s',
      '0.00–0.50 s of 1.00 s',
      '0.50–1.00 s of 1.00 s'
    ]);
    const bars = qa('.jp-Toolhost-timingBar').map(bar => [bar.style.left, bar.style.width]);
    expect(bars).toEqual([
      ['0%', '100%'],
      ['0%', '50%'],
      ['50%', '50%']
    ]);
    expect(qa('.jp-Toolhost-card').map(c => c.dataset.toolUseId)).toEqual(['a', 'b', 'c']);
  });

  it('starts compact; a header click opens one card, the toggle opens all', () => {
    const onViewChange = vi.fn();
    render(batch([card({ tool_use_id: 'a' }), card({ tool_use_id: 'b' })]), { onViewChange });
    const [first, second] = qa('.jp-Toolhost-card');
    expect([isOpen(first), isOpen(second)]).toEqual([false, false]);
    q('.jp-Toolhost-cardHeader', first).click();
    expect([isOpen(first), isOpen(second)]).toEqual([true, false]);
    expect(q('.jp-Toolhost-cardHeader', first).getAttribute('aria-expanded')).toBe('true');

    const toggle = q<HTMLButtonElement>('.jp-Toolhost-viewToggle');
    expect(toggle.textContent).toBe('Expand all');
    toggle.click();
    expect(q('.jp-Toolhost-root').dataset.view).toBe('expanded');
    expect([isOpen(first), isOpen(second)]).toEqual([true, true]);
    expect(toggle.textContent).toBe('Compact');
    expect(onViewChange).toHaveBeenCalledWith('expanded');

    q('.jp-Toolhost-cardHeader', second).click();
    expect([isOpen(first), isOpen(second)]).toEqual([true, false]);
    setView(q('.jp-Toolhost-root'), 'compact');
    expect([isOpen(first), isOpen(second)]).toEqual([false, false]);
  });

  it('highlights code only, not cat -n line numbers', async () => {
    const highlight = vi.fn(async (code: string, _language: string, into: HTMLElement) => {
      into.replaceChildren(Object.assign(document.createElement('span'), { className: 'tok', textContent: code }));
    });
    const rendered = render(batch([card()]), { highlight });
    await rendered.ready;
    expect(highlight).toHaveBeenCalledTimes(1);
    expect(highlight.mock.calls[0][0]).toBe('import os\nprint(os.getcwd())');
    expect(highlight.mock.calls[0][1]).toBe('python');
    expect(q('.jp-Toolhost-gutter').textContent).toBe('1\n2');
    expect(q('.jp-Toolhost-code .tok').textContent).toBe('import os\nprint(os.getcwd())');
  });

  it('keeps plain text when highlighting fails, and never highlights errors', async () => {
    const highlight = vi.fn(async () => {
      throw new Error('no such language');
    });
    const rendered = render(
      batch([card({ result: '{"a": 1}', summary: 'x' }), card({ tool_use_id: 'e', status: 'error', result: '{"a": 2}' })]),
      { highlight }
    );
    await rendered.ready;
    expect(highlight).toHaveBeenCalledTimes(1);
    expect(qa('.jp-Toolhost-code').map(pre => pre.textContent)).toEqual(['{"a": 1}', '{"a": 2}']);
    expect(qa('.jp-Toolhost-result')[1].classList.contains('jp-mod-error')).toBe(true);
  });

  it('shows a persisted result as a collapsed preview with an Open full output action', async () => {
    const path = '/srv/root/work/.toolhost/sessions/s1/tool-results/toolu_02.txt';
    const openPersisted = vi.fn(async () => undefined);
    render(
      batch([card({ tool_use_id: 'toolu_02', name: 'Bash', summary: 'seq 20000', result: PERSISTED_RESULT, persisted_path: path, original_size: 100_000 })]),
      { openPersisted }
    );
    expect(q('.jp-Toolhost-badgePersisted').textContent).toBe('saved');
    // Never the machine's absolute path: the kernel's relative one, else the folder and name.
    expect(q('.jp-Toolhost-persistedInfo').textContent).toBe('Full output: 97.7KB, saved to tool-results/toolu_02.txt');
    expect(q('.jp-Toolhost-persistedPath').title).not.toContain('/srv');
    expect(q('.jp-Toolhost-open').title).not.toContain('/srv');
    const details = q<HTMLDetailsElement>('.jp-Toolhost-preview');
    expect(details.open).toBe(false);
    expect(q('.jp-Toolhost-code', details).textContent).toBe('line 1\nline 2...');
    const open = q<HTMLButtonElement>('.jp-Toolhost-open');
    expect(open.textContent).toBe('Open full output');
    open.click();
    expect(openPersisted).toHaveBeenCalledWith(path, open);
  });

  it('finds the path in the persisted-output block when the payload has none (Bash spills itself)', () => {
    const openPersisted = vi.fn(async (_path: string, _from: HTMLElement) => undefined);
    render(batch([card({ name: 'Bash', result: `${PERSISTED_RESULT}\nstderr:\nwarning: slow` })]), { openPersisted });
    expect(q('.jp-Toolhost-persistedInfo').textContent).toBe(
      'Full output: 97.7KB, saved to tool-results/toolu_02.txt'
    );
    expect(q('.jp-Toolhost-preview .jp-Toolhost-code').textContent).toBe('line 1\nline 2...');
    q<HTMLButtonElement>('.jp-Toolhost-open').click();
    expect(openPersisted.mock.calls[0][0]).toBe('/srv/root/work/.toolhost/sessions/s1/tool-results/toolu_02.txt');
  });

  it('falls back to the character count when there is no block to read a size from', () => {
    render(batch([card({ result: 'x'.repeat(10), persisted_path: 'out.txt', original_size: 123_456 })]));
    expect(q('.jp-Toolhost-persistedInfo').textContent).toBe('Full output: 123,456 characters, saved to out.txt');
  });

  it('says why opening failed, next to the button', async () => {
    const openPersisted = vi.fn(async () => {
      throw new Error('The server cannot read x.txt');
    });
    render(batch([card({ result: PERSISTED_RESULT, persisted_path: 'x.txt' })]), { openPersisted });
    q<HTMLButtonElement>('.jp-Toolhost-open').click();
    await vi.waitFor(() => expect(q('.jp-Toolhost-openStatus').textContent).toBe('The server cannot read x.txt'));
  });

  it('disables Open full output without a host that can open files', () => {
    render(batch([card({ result: PERSISTED_RESULT, persisted_path: 'x.txt' })]));
    expect(q<HTMLButtonElement>('.jp-Toolhost-open').disabled).toBe(true);
  });

  it('puts text from the kernel into the DOM as text, never as markup', () => {
    render(batch([card({ name: '<b>x</b>', summary: '<img src=x onerror=alert(1)>', result: '<script>1</script>' })]));
    expect(document.querySelector('img, script, b')).toBeNull();
    expect(q('.jp-Toolhost-summary').textContent).toBe('<img src=x onerror=alert(1)>');
  });
});

describe('code, live progress, sub-agents, checklists', () => {
  const CODE = 'import pandas as pd\ndf = pd.read_csv("data.csv")\ndf.describe()';

  it('shows the complete code in the body, highlighted, with the summary on one line', async () => {
    const highlight = vi.fn(async (code: string, _language: string, into: HTMLElement) => {
      into.replaceChildren(Object.assign(document.createElement('span'), { className: 'tok', textContent: code }));
    });
    const rendered = render(
      batch([card({ name: 'RunPython', summary: 'import pandas as pd …', result: 'ok', code: { language: 'python', source: CODE, insertable: false } })]),
      { highlight }
    );
    await rendered.ready;
    expect(q('.jp-Toolhost-summary').textContent).toBe('import pandas as pd …');
    expect(q('.jp-Toolhost-summary').title).toBe(CODE);
    const source = q('.jp-Toolhost-codeBlock .jp-Toolhost-codeSource');
    expect(source.textContent).toBe(CODE);
    expect(source.dataset.language).toBe('python');
    expect(q('.tok', source).textContent).toBe(CODE);
    expect(highlight.mock.calls.map(call => call[1])).toContain('python');
    expect(q('.jp-Toolhost-codeLanguage').textContent).toBe('python');
    // not insertable: no button
    expect(q('.jp-Toolhost-insert')).toBeNull();
  });

  it('inserts insertable code as a cell below, and says why when that fails', async () => {
    const insertCell = vi.fn(async () => undefined);
    render(batch([card({ code: { language: 'shell', source: 'ls -la', insertable: true } })]), { insertCell });
    const button = q<HTMLButtonElement>('.jp-Toolhost-insert');
    expect(button.textContent).toBe('Insert as cell below');
    button.click();
    expect(insertCell).toHaveBeenCalledWith('ls -la', button);

    insertCell.mockRejectedValueOnce(new Error('This notebook is read-only.'));
    render(batch([card({ code: { language: 'shell', source: 'ls', insertable: true } })]), { insertCell });
    q<HTMLButtonElement>('.jp-Toolhost-insert').click();
    await vi.waitFor(() => expect(q('.jp-Toolhost-insertStatus').textContent).toBe('This notebook is read-only.'));
    expect(q('.jp-Toolhost-insertStatus').dataset.state).toBe('error');

    render(batch([card({ code: { language: 'shell', source: 'ls', insertable: true } })]));
    expect(q<HTMLButtonElement>('.jp-Toolhost-insert').disabled).toBe(true);
  });

  it('shows a running call: elapsed time, last output lines and a progress bar, visible while compact', () => {
    render({
      version: 1,
      kind: 'live',
      calls: [card({ name: 'Bash', status: 'running', ended: null, duration: null, result: '', elapsed: 65.4, fraction: 0.42, tail: ['step 1', 'step 2'] })]
    });
    const header = q('.jp-Toolhost-cardHeader');
    expect(q('.jp-Toolhost-elapsed', header).textContent).toBe('1 min 05 s');
    expect(q('.jp-Toolhost-duration', header)).toBeNull();
    const live = q('.jp-Toolhost-card > .jp-Toolhost-cardLive');
    expect(q('pre.jp-Toolhost-tail', live).textContent).toBe('step 1\nstep 2');
    const bar = q<HTMLProgressElement>('progress.jp-Toolhost-progressBar', live);
    expect([bar.getAttribute('max'), bar.value]).toEqual(['1', 0.42]);
    expect(q('.jp-Toolhost-progressLabel', live).textContent).toBe('42%');
    // the live parts are not inside the collapsible body
    expect(live.closest('.jp-Toolhost-cardBody')).toBeNull();
  });

  it('shows no bar without a fraction, and no live parts once a call is done', () => {
    render({ version: 1, kind: 'live', calls: [card({ status: 'running', result: '', elapsed: 3, tail: ['x'] })] });
    expect(q('.jp-Toolhost-progressBar')).toBeNull();
    expect(q('.jp-Toolhost-elapsed').textContent).toBe('3 s');
    render(batch([card({ elapsed: 3, fraction: 1, tail: ['x'] })]));
    expect(q('.jp-Toolhost-cardLive')).toBeNull();
    expect(q('.jp-Toolhost-elapsed')).toBeNull();
    expect(q('.jp-Toolhost-duration').textContent).toBe('250 ms');
  });

  it('nests sub-agent calls inside the parent card, recursively, with a count in the header', () => {
    render(
      batch([
        card({
          tool_use_id: 'agent',
          name: 'Agent',
          summary: 'explore the repo',
          result: 'done exploring',
          children: [
            card({ tool_use_id: 'c1', name: 'Glob' }),
            card({ tool_use_id: 'c2', name: 'Agent', children: [card({ tool_use_id: 'c2a', name: 'Grep' })] }),
            card({ tool_use_id: 'c3', name: 'Read' })
          ]
        })
      ])
    );
    const parent = q('.jp-Toolhost-card[data-tool-use-id="agent"]');
    expect(q(':scope > .jp-Toolhost-cardHeader .jp-Toolhost-childCount', parent).textContent).toBe('3 calls');
    const children = q(':scope > .jp-Toolhost-cardBody > .jp-Toolhost-children', parent);
    expect(qa(':scope > .jp-Toolhost-card', children).map(c => c.dataset.toolUseId)).toEqual(['c1', 'c2', 'c3']);
    const nested = q('.jp-Toolhost-card[data-tool-use-id="c2"]');
    expect(q(':scope > .jp-Toolhost-cardHeader .jp-Toolhost-childCount', nested).textContent).toBe('1 call');
    expect(q('.jp-Toolhost-children .jp-Toolhost-card', nested).dataset.toolUseId).toBe('c2a');
    // a child's header toggles the child only
    q(':scope > .jp-Toolhost-cardHeader', parent).click();
    q(':scope > .jp-Toolhost-cardHeader', nested).click();
    expect([isOpen(parent), isOpen(nested)]).toEqual([true, true]);
    q(':scope > .jp-Toolhost-cardHeader', nested).click();
    expect([isOpen(parent), isOpen(nested)]).toEqual([true, false]);
  });

  it('shows a checklist with its statuses, open by default, and in the live panel', () => {
    const checklist = [
      { content: 'Load the data', status: 'completed', active_form: 'Loading the data' },
      { content: 'Fit the model', status: 'in_progress', active_form: 'Fitting the model' },
      { content: 'Plot residuals', status: 'in_progress' },
      { content: 'Write summary', status: 'pending', active_form: 'Writing summary' }
    ];
    render(batch([card({ name: 'TodoWrite', summary: '4 todos', result: 'Todos updated', checklist })]));
    const todo = q('.jp-Toolhost-card');
    expect(isOpen(todo)).toBe(true);
    expect(q('.jp-Toolhost-cardHeader').getAttribute('aria-expanded')).toBe('true');
    expect(q('.jp-Toolhost-checklistHeader').textContent).toBe('1/4 done');
    const items = qa('ul.jp-Toolhost-checklist > li');
    expect(items.map(li => li.dataset.status)).toEqual(['completed', 'in_progress', 'in_progress', 'pending']);
    expect(items.map(li => q('.jp-Toolhost-checkMark', li).textContent)).toEqual(['☑', '◐', '◐', '☐']);
    expect(items.map(li => q('.jp-Toolhost-checkText', li).textContent)).toEqual([
      'Load the data',
      'Fitting the model',
      'Plot residuals',
      'Write summary'
    ]);
    // it can still be closed
    q('.jp-Toolhost-cardHeader').click();
    expect(isOpen(todo)).toBe(false);

    render({ version: 1, kind: 'live', calls: [], status: 'running', elapsed: 4, checklist });
    expect(q('.jp-Toolhost-root').classList.contains('jp-mod-empty')).toBe(false);
    expect(q('.jp-Toolhost-liveStatus').textContent).toBe('running · 4 s');
    expect(qa('.jp-Toolhost-live > .jp-Toolhost-checklistBox li')).toHaveLength(4);
  });

  it('says how many plots or tables the kernel put below a card', () => {
    render(batch([card({ displays_below: 1 }), card({ tool_use_id: 'b', displays_below: 2 }), card({ tool_use_id: 'c' })]));
    expect(qa('.jp-Toolhost-displaysBelow').map(d => d.textContent)).toEqual([
      '1 plot/table below ↓',
      '2 plots/tables below ↓'
    ]);
  });

  it('never says the decision word twice', () => {
    render(
      batch([
        card({ status: 'denied', result: 'Permission denied by rule', decision: { behavior: 'deny', reason: 'rule Bash(rm:*)' } }),
        card({ tool_use_id: 'b', decision: { behavior: 'allow', reason: 'rule Read(*)' } })
      ])
    );
    const [denied, allowed] = qa('.jp-Toolhost-cardHeader');
    expect(denied.textContent?.match(/denied/g)).toHaveLength(1);
    expect(q('.jp-Toolhost-badgeDecision', denied).textContent).toBe('denied');
    expect(q('.jp-Toolhost-statusLabel', denied)).toBeNull();
    expect(q('.jp-Toolhost-statusLabel', allowed).textContent).toBe('done');
    expect(q('.jp-Toolhost-decision').textContent).toBe('Why: rule Bash(rm:*)');
  });
});

describe('other displays', () => {
  it('renders an empty live panel as nothing and a running one as cards with progress', () => {
    render({ version: 1, kind: 'live', calls: [] });
    expect(q('.jp-Toolhost-root').classList.contains('jp-mod-empty')).toBe(true);
    render({ version: 1, kind: 'live', calls: [card({ status: 'running', ended: null, duration: null, result: '', progress: '3 lines' })] });
    expect(q('.jp-Toolhost-card').dataset.status).toBe('running');
    expect(q('.jp-Toolhost-progress').textContent).toBe('3 lines');
    expect(q('.jp-Toolhost-duration')).toBeNull();
  });

  it('renders footers, notices, tables and unknown kinds', () => {
    render({ version: 1, kind: 'footer', tool_calls: 1, model_requests: 2, stop_reason: 'end_turn', usage: { input_tokens: 27498, output_tokens: 221 }, cost_usd: 0.00123, duration: 1.5 });
    // A footer from an older kernel (no `parts`): the kernel's words and order, one formatter.
    expect(q('.jp-Toolhost-footer').textContent).toBe(
      '1 tool call · 2 model requests · 27,498 in / 221 out tokens · ≈ $0.0012 · stop: end_turn · 1.5 s'
    );
    // Today's kernel sends its words: shown as they are, then its times.
    render({
      version: 1,
      kind: 'footer',
      tool_calls: 1,
      usage: { input_tokens: 27498 },
      parts: ['1 tool call', '27,498 in / 221 out tokens', 'stop: interrupted'],
      times: ['4.1 s', 'waited 8.0 s for you'],
      duration: 4.1
    });
    expect(q('.jp-Toolhost-footer').textContent).toBe(
      '1 tool call · 27,498 in / 221 out tokens · stop: interrupted · 4.1 s · waited 8.0 s for you'
    );
    render({ version: 1, kind: 'footer', tool_calls: 2, model_requests: 1, replayed: true });
    expect(q('.jp-Toolhost-footer').textContent).toBe('2 tool calls · 1 model request · replayed — no tokens spent');
    expect(q('.jp-Toolhost-footer').textContent).not.toContain('$');
    // With a cassette the footer is the same whether it records or replays.
    const usage = { input_tokens: 1200, output_tokens: 30 };
    const shown = (cassette: string, replayed: boolean): string => {
      render({ version: 1, kind: 'footer', tool_calls: 1, usage, cost_usd: 0.0042, replayed, cassette });
      return q('.jp-Toolhost-footer').textContent ?? '';
    };
    expect(shown('recorded', true)).toBe(shown('recorded', false));
    expect(shown('recorded', true)).toBe('1 tool call · 1,200 in / 30 out tokens · ≈ $0.0042 · as recorded — a replay spends nothing');
    expect(shown('scripted', true)).toBe(shown('scripted', false));
    expect(shown('scripted', false)).toBe('1 tool call · scripted answers — no tokens spent');
    render({ version: 1, kind: 'notice', level: 'error', text: 'Interrupted' });
    expect(q('.jp-Toolhost-notice').dataset.level).toBe('error');
    render({ version: 1, kind: 'tools', title: 'Tools', columns: ['name'], rows: [['Read'], ['Bash']] });
    expect(qa('.jp-Toolhost-table td').map(td => td.textContent)).toEqual(['Read', 'Bash']);
    expect(q('.jp-Toolhost-table caption').textContent).toBe('Tools');
    // A table the kernel stacks below another (%agent cost's costliest calls) is drawn too.
    render({
      version: 1,
      kind: 'cost',
      title: 'session s1',
      columns: ['measure', 'value'],
      rows: [['estimated cost', '$0.0121']],
      below: [{ version: 1, kind: 'cost-calls', title: 'the calls that cost most', columns: ['tool'], rows: [['Read']] }]
    });
    expect(qa('.jp-Toolhost-tables .jp-Toolhost-table caption').map(c => c.textContent)).toEqual([
      'session s1',
      'the calls that cost most'
    ]);
    render({ version: 1, kind: 'mystery', x: 1 });
    expect(JSON.parse(q('.jp-Toolhost-unknown').textContent ?? '')).toEqual({ version: 1, kind: 'mystery', x: 1 });
  });

  it('draws a timeline with one bar per timed call', () => {
    render({ version: 1, kind: 'timeline', calls: [
      { name: 'Read', batch: 1, start: 0, end: 2 },
      { name: 'Grep', batch: 1, start: 1, end: 2 },
      { name: 'Bash', batch: 2, start: null, end: null }
    ] });
    expect(qa('.jp-Toolhost-timelineLabel').map(l => l.textContent)).toEqual(['#1 Read', '#1 Grep']);
    expect(qa('.jp-Toolhost-timingBar').map(b => b.style.left)).toEqual(['0%', '50%']);
    expect(qa('.jp-Toolhost-timingLabel').map(l => l.textContent)).toEqual([
      '0.00–2.00 s of 2.00 s',
      '1.00–2.00 s of 2.00 s'
    ]);
  });
});

describe('what a person reads in a card', () => {
  it('says "waiting for you" while a prompt waits, and keeps the wait out of the run time', () => {
    render({
      version: 1,
      kind: 'live',
      status: 'running',
      elapsed: 18,
      calls: [card({ status: 'running', label: 'waiting for you', elapsed: 16.2, ended: null, duration: null })]
    });
    expect(q('.jp-Toolhost-card').dataset.label).toBe('waiting for you');
    expect(q('.jp-Toolhost-statusLabel').textContent).toBe('waiting for you');
    expect(q('.jp-Toolhost-elapsed').title).toBe('waiting for you for 16 s');
    expect(q('.jp-Toolhost-liveStatus').textContent).toBe('running · 18 s');
    render({
      version: 1,
      kind: 'live',
      status: 'Waiting for you',
      elapsed: 18,
      calls: [card({ status: 'running', label: 'waiting for you', elapsed: 16.2, ended: null, duration: null })]
    });
    // The kernel's clock for the line is the wait's, written as the kernel writes it.
    expect(q('.jp-Toolhost-liveStatus').textContent).toBe('Waiting for you · 18 s');
    render(batch([card({ status: 'denied', label: 'denied', duration: 0.2, waited: 16.8 })]));
    expect(q('.jp-Toolhost-duration').textContent).toBe('200 ms');
    expect(q('.jp-Toolhost-approvalTime').textContent).toBe('waited 16.8 s for approval');
    render(
      batch([
        card({
          status: 'done',
          label: 'done',
          duration: 0.2,
          waited: 8,
          waited_text: ['waited 8.0 s for your answer'],
          waits: [[0.1, 8.1, 'your answer']]
        })
      ])
    );
    expect(q('.jp-Toolhost-approvalTime').textContent).toBe('waited 8.0 s for your answer');
  });

  it('shows what a result adds to the conversation, and whether it was measured', () => {
    render(
      batch([
        card({
          tool_use_id: 'a',
          status: 'done',
          label: 'done',
          duration: 0.2,
          tokens_text: '1,612 tokens · image 1092×1092 px',
          tokens_measured: true
        }),
        card({ tool_use_id: 'b', status: 'running', label: 'running', tokens_text: '≈9 tokens' })
      ])
    );
    const shown = document.querySelectorAll('.jp-Toolhost-tokens');
    expect(shown.length).toBe(1); // a running call has no result yet
    expect(shown[0].textContent).toBe('1,612 tokens · image 1092×1092 px');
    expect((shown[0] as HTMLElement).dataset.measured).toBe('true');
    expect((shown[0] as HTMLElement).title).toContain('measured');
  });

  it('keeps the cards and previews a person opened when the kernel updates the display', () => {
    const calls = (tokens: string) =>
      batch([
        card({ tool_use_id: 'a', result: PERSISTED_RESULT, tokens_text: tokens }),
        card({ tool_use_id: 'b', tokens_text: tokens })
      ]);
    const before = render(calls('≈700 tokens')).node;
    const first = q('.jp-Toolhost-card[data-tool-use-id="a"]');
    q('.jp-Toolhost-cardHeader', first).click();
    expect(isOpen(first)).toBe(true);
    const preview = first.querySelector('details');
    expect(preview).not.toBeNull();
    preview!.open = true;
    const after = renderPayload(readPayload(calls('712 tokens')), { view: 'compact' }).node;
    keepChoices(before, after);
    const again = after.querySelector<HTMLElement>('.jp-Toolhost-card[data-tool-use-id="a"]')!;
    expect(isOpen(again)).toBe(true);
    expect(again.querySelector('details')!.open).toBe(true);
    expect(isOpen(after.querySelector<HTMLElement>('.jp-Toolhost-card[data-tool-use-id="b"]')!)).toBe(false);
    expect(again.querySelector('.jp-Toolhost-tokens')!.textContent).toBe('712 tokens');
  });

  it('marks an interrupted call so and keeps the lines it printed before the stop', () => {
    render(
      batch([
        card({
          status: 'cancelled',
          label: 'interrupted',
          tail: ['step 1', 'step 2'],
          result: '<tool_use_error>Cancelled: interrupted</tool_use_error>'
        })
      ])
    );
    expect(q('.jp-Toolhost-statusLabel').textContent).toBe('interrupted');
    expect(isOpen(q('.jp-Toolhost-card'))).toBe(true); // open: what it printed is the point
    expect(q('.jp-Toolhost-stoppedTail .jp-Toolhost-tail').textContent).toBe('step 1\nstep 2');
    expect(document.body.textContent).not.toContain('tool_use_error');
    expect(document.body.textContent).toContain('Cancelled: interrupted');
  });

  it('ends a cut preview with the marker and shows the saved path relative to the notebook', () => {
    render(
      batch([
        card({
          persisted_path: '/home/u/nb/.toolhost/sessions/s/tool-results/toolu_9.txt',
          saved: {
            path: '.toolhost/sessions/s/tool-results/toolu_9.txt',
            size: '106.3 KB',
            cut: '… 19,512 more lines, 106.3 KB saved'
          },
          result: 'Preview (first 2KB):\n1\n2\n'
        })
      ])
    );
    expect(q('.jp-Toolhost-persistedSize').textContent).toBe('Full output: 106.3 KB, saved to ');
    expect(q('.jp-Toolhost-persistedPath').textContent).toBe('.toolhost/sessions/s/tool-results/toolu_9.txt');
    expect(q('.jp-Toolhost-preview .jp-Toolhost-cut').textContent).toBe('… 19,512 more lines, 106.3 KB saved');
    render(batch([card({ result: 'x'.repeat(2000), cut: '… 500 more characters' })]));
    expect(q('.jp-Toolhost-cut').textContent).toBe('… 500 more characters');
  });

  it('draws nothing for a streaming answer display (its Markdown is drawn by JupyterLab)', () => {
    const rendered = render({ version: 1, kind: 'answer', live: true, text: '' });
    expect(rendered.node.classList.contains('jp-mod-empty')).toBe(true);
    expect(rendered.node.textContent).toBe('');
  });
});
