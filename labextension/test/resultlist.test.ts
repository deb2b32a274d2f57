import { describe, expect, it, vi } from 'vitest';

import { EMPTY_TEXT, ResultList, formatModified } from '../src/resultlist';
import { NOT_LOADED, type SavedResult } from '../src/results';

const RESULTS: SavedResult[] = [
  { path: '/w/.toolhost/sessions/s1/tool-results/toolu_02.txt', name: 'toolu_02.txt', session: 's1', size: 97_700, modified: 1_764_727_920 },
  { path: '/w/.toolhost/sessions/s0/tool-results/toolu_01.txt', name: 'toolu_01.txt', session: 's0', size: 12, modified: null }
];

function mount(list: ResultList): ResultList {
  document.body.replaceChildren(list.node);
  return list;
}

describe('the list of saved results', () => {
  it('shows one row per result with name, session, size, time and an Open button', async () => {
    const open = vi.fn(async (_path: string) => undefined);
    const list = mount(new ResultList(async () => RESULTS, open));
    await list.refresh();
    const rows = list.node.querySelectorAll<HTMLElement>('tr.jp-ToolhostResultList-row');
    expect(rows).toHaveLength(2);
    const cells = (row: Element) => Array.from(row.querySelectorAll('td'), td => td.textContent);
    expect(cells(rows[0])).toEqual(['toolu_02.txt', 's1', '95.4 KB', formatModified(1_764_727_920), 'Open']);
    expect(cells(rows[1])).toEqual(['toolu_01.txt', 's0', '12 B', '', 'Open']);
    expect(rows[0].dataset.path).toBe(RESULTS[0].path);
    expect(list.node.dataset.state).toBe('list');

    const buttons = list.node.querySelectorAll<HTMLButtonElement>('button.jp-ToolhostResultList-open');
    expect(Array.from(buttons, b => b.textContent)).toEqual(['Open', 'Open']);
    buttons[1].click();
    await vi.waitFor(() => expect(open).toHaveBeenCalledWith(RESULTS[1].path));
  });

  it('says why an Open failed beside its button', async () => {
    const list = mount(
      new ResultList(async () => RESULTS, async () => {
        throw new Error('The kernel could not read x: gone');
      })
    );
    await list.refresh();
    list.node.querySelector<HTMLButtonElement>('.jp-ToolhostResultList-open')?.click();
    await vi.waitFor(() =>
      expect(list.node.querySelector('.jp-ToolhostResultList-status')?.textContent).toBe(
        'The kernel could not read x: gone'
      )
    );
  });

  it('says so when there is nothing saved yet', async () => {
    const list = mount(new ResultList(async () => [], async () => undefined));
    await list.refresh();
    expect(list.node.querySelector('.jp-ToolhostResultList-empty')?.textContent).toBe(EMPTY_TEXT);
    expect(EMPTY_TEXT).toBe('No saved results yet: a tool result over the size budget is saved here.');
    expect(list.node.querySelector('table')).toBeNull();
  });

  it("shows the kernel's error, and lists again on Refresh", async () => {
    const load = vi
      .fn<() => Promise<SavedResult[]>>()
      .mockRejectedValueOnce(new Error(NOT_LOADED))
      .mockResolvedValueOnce(RESULTS);
    const list = mount(new ResultList(load, async () => undefined));
    await list.refresh();
    expect(list.node.querySelector('.jp-ToolhostResultList-error')?.textContent).toBe(NOT_LOADED);
    expect(list.node.dataset.state).toBe('error');
    list.node.querySelector<HTMLButtonElement>('.jp-ToolhostResultList-refresh')?.click();
    await vi.waitFor(() => expect(list.node.querySelectorAll('.jp-ToolhostResultList-row')).toHaveLength(2));
    expect(list.node.querySelector('.jp-ToolhostResultList-error')).toBeNull();
  });

  it('shows the time as local YYYY-MM-DD HH:MM', () => {
    const seconds = new Date(2025, 11, 3, 14, 5, 59).getTime() / 1000;
    expect(formatModified(seconds)).toBe('2025-12-03 14:05');
    expect(formatModified(null)).toBe('');
  });
});
