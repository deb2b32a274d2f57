/**
 * The read-only view of a persisted result read through the kernel: a header line with its
 * path and size, the text in a monospace block, and "Load more" while the file has more.
 */

import { Widget } from '@lumino/widgets';

import { actionButton, el } from './dom';
import { formatSize } from './format';
import type { ResultChunk } from './results';

/** The class of the main-area tab (and the prefix of its parts). */
export const VIEWER_CLASS = 'jp-ToolhostResultViewer';

/** The text of one persisted result; `more(offset)` reads the next chunk. */
export class ResultView extends Widget {
  private readonly _text: HTMLPreElement;
  private readonly _more: HTMLElement;
  private readonly _remaining: HTMLElement;
  private _next: number | null;

  constructor(
    first: ResultChunk,
    private readonly _read: (offset: number) => Promise<ResultChunk>
  ) {
    super();
    this.addClass(`${VIEWER_CLASS}-content`);
    const header = el('div', `${VIEWER_CLASS}-header`);
    header.append(
      el('code', `${VIEWER_CLASS}-path`, first.shownPath),
      el('span', `${VIEWER_CLASS}-size`, formatSize(first.size)),
      el('span', `${VIEWER_CLASS}-readonly`, 'read-only')
    );
    this._text = el('pre', `${VIEWER_CLASS}-text`, first.text);
    this._remaining = el('span', `${VIEWER_CLASS}-remaining`);
    const [button, status] = actionButton('Load more', {
      className: `${VIEWER_CLASS}-loadMore`,
      statusClass: `${VIEWER_CLASS}-status`,
      unavailable: '',
      busy: 'Reading through the kernel…',
      run: () => this.loadMore()
    });
    this._more = el('div', `${VIEWER_CLASS}-more`);
    this._more.append(this._remaining, button, status);
    this.node.append(header, this._text, this._more);
    this._next = null;
    this._show(first);
  }

  /** Where the next chunk starts; null when all of the file is shown. */
  get nextOffset(): number | null {
    return this._next;
  }

  /** Reads the next chunk and appends it (nothing when the file is all shown). */
  async loadMore(): Promise<void> {
    if (this._next === null) {
      return;
    }
    const chunk = await this._read(this._next);
    this._text.append(document.createTextNode(chunk.text));
    this._show(chunk);
  }

  private _show(chunk: ResultChunk): void {
    this._next = chunk.nextOffset;
    this._more.hidden = this._next === null;
    if (this._next !== null) {
      this._remaining.textContent =
        `Read up to ${formatSize(this._next)} of ${formatSize(chunk.size)}; more of the file remains.`;
    }
  }
}
