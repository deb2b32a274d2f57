/**
 * The list of saved results the kernel reports ("Agent: open session folder" when the
 * server hides `.toolhost/`): one row per result with its name, session, size and time,
 * and an "Open" button that shows it in the read-only viewer. Pure DOM: loading and
 * opening come in as functions, so it is unit-tested without JupyterLab.
 */

import { Widget } from '@lumino/widgets';

import { actionButton, el } from './dom';
import { formatSize } from './format';
import type { SavedResult } from './results';

/** The class of the main-area tab (and the prefix of its parts). */
export const LIST_CLASS = 'jp-ToolhostResultList';

/** What an empty list says. */
export const EMPTY_TEXT = 'No saved results yet: a tool result over the size budget is saved here.';

const two = (value: number) => String(value).padStart(2, '0');

/** "2025-12-03 14:05" in local time, for unix seconds; empty when unknown. */
export function formatModified(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) {
    return '';
  }
  const date = new Date(seconds * 1000);
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}`
  );
}

/** The saved results `load` reads (through the kernel); `open(path)` shows one. */
export class ResultList extends Widget {
  private readonly _body: HTMLElement;
  private readonly _refresh: HTMLButtonElement;
  private _loading: Promise<void> | null = null;

  constructor(
    private readonly _load: () => Promise<SavedResult[]>,
    private readonly _open: (path: string) => Promise<void>
  ) {
    super();
    this.addClass(`${LIST_CLASS}-content`);
    const header = el('div', `${LIST_CLASS}-header`);
    this._refresh = el('button', `${LIST_CLASS}-refresh jp-Button jp-mod-styled jp-mod-reject`, 'Refresh');
    this._refresh.type = 'button';
    this._refresh.title = 'Ask the kernel again';
    this._refresh.addEventListener('click', () => void this.refresh());
    header.append(
      el('span', `${LIST_CLASS}-title`, "Saved tool results of this notebook's kernel, newest first"),
      this._refresh
    );
    this._body = el('div', `${LIST_CLASS}-body`);
    this.node.append(header, this._body);
  }

  /** Asks for the list (again) and shows it, or why it could not be read. */
  refresh(): Promise<void> {
    if (!this._loading) {
      this._loading = this._fill().finally(() => {
        this._loading = null;
      });
    }
    return this._loading;
  }

  private async _fill(): Promise<void> {
    this._refresh.disabled = true;
    this.node.dataset.state = 'loading';
    this._body.replaceChildren(el('div', `${LIST_CLASS}-loading`, 'Reading through the kernel…'));
    try {
      const results = await this._load();
      this.node.dataset.state = results.length ? 'list' : 'empty';
      this._body.replaceChildren(
        results.length ? this._table(results) : el('div', `${LIST_CLASS}-empty`, EMPTY_TEXT)
      );
    } catch (reason) {
      this.node.dataset.state = 'error';
      const error = el('div', `${LIST_CLASS}-error`, reason instanceof Error ? reason.message : String(reason));
      error.setAttribute('role', 'alert');
      this._body.replaceChildren(error);
    } finally {
      this._refresh.disabled = false;
    }
  }

  private _table(results: SavedResult[]): HTMLElement {
    const table = el('table', `${LIST_CLASS}-table`);
    const head = el('tr');
    for (const label of ['Name', 'Session', 'Size', 'Modified', '']) {
      head.append(el('th', undefined, label));
    }
    table.createTHead().append(head);
    const body = table.createTBody();
    for (const result of results) {
      const row = el('tr', `${LIST_CLASS}-row`);
      row.dataset.path = result.path;
      const name = el('td', `${LIST_CLASS}-name`, result.name);
      name.title = result.shownPath;
      const modified = el('td', `${LIST_CLASS}-modified`, formatModified(result.modified));
      if (result.modified !== null) {
        modified.title = new Date(result.modified * 1000).toLocaleString();
      }
      const [button, status] = actionButton('Open', {
        className: `${LIST_CLASS}-open`,
        statusClass: `${LIST_CLASS}-status`,
        title: `Open ${result.name} read-only`,
        unavailable: '',
        busy: 'Reading through the kernel…',
        run: () => this._open(result.path)
      });
      const actions = el('td', `${LIST_CLASS}-actions`);
      actions.append(button, status);
      row.append(
        name,
        el('td', `${LIST_CLASS}-session`, result.session),
        el('td', `${LIST_CLASS}-size`, result.size === null ? '' : formatSize(result.size)),
        modified,
        actions
      );
      body.append(row);
    }
    return table;
  }
}
