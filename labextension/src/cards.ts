/**
 * Builds the DOM for one toolhost display: tool call cards (status, duration, decision
 * reason, result), concurrent batches grouped, persisted results as collapsible previews
 * with an "Open full output" action, footers, notices and tables.
 *
 * Pure DOM: no JupyterLab imports, so it is unit-tested in a plain DOM. What needs
 * JupyterLab (highlighting, opening files) comes in through `RenderContext`.
 */

import {
  STATUS_MARK,
  batchSpan,
  formatChars,
  formatDuration,
  guessLanguage,
  persistedPreview,
  splitNumbered,
  totalDuration
} from './format';
import type {
  BatchPayload,
  Call,
  FooterPayload,
  LivePayload,
  NoticePayload,
  Payload,
  TablePayload,
  TimelinePayload
} from './payload';

/** Compact: one line per call, details on click. Expanded: every card open. */
export type View = 'compact' | 'expanded';

/** What the cards need from their host. */
export interface RenderContext {
  /** The view a new display starts in. */
  view: View;
  /** Highlights `code` as `language` into `into` (which already holds it as plain text). */
  highlight?: (code: string, language: string, into: HTMLElement) => Promise<void>;
  /**
   * Opens a persisted result (the path the kernel reported) in an editor tab; `from` is
   * the button, so the host can tell which notebook it is in. Rejects with a message to show.
   */
  openPersisted?: (path: string, from: HTMLElement) => Promise<void>;
  /** Called when the view of this display is switched by its toggle. */
  onViewChange?: (view: View) => void;
}

/** A rendered display: its node and a promise for highlighting still in flight. */
export interface Rendered {
  node: HTMLElement;
  ready: Promise<void>;
}

const PREFIX = 'jp-Toolhost';

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Renders any payload into a new root element. */
export function renderPayload(payload: Payload, context: RenderContext): Rendered {
  const root = el('div', `${PREFIX}-root`);
  root.dataset.kind = payload.kind;
  root.dataset.view = context.view;
  const pending: Promise<void>[] = [];
  switch (payload.kind) {
    case 'batch':
      root.append(renderBatch(payload, context, pending));
      break;
    case 'live':
      renderLive(root, payload, context, pending);
      break;
    case 'footer':
      root.append(renderFooter(payload));
      break;
    case 'notice':
      root.append(renderNotice(payload));
      break;
    case 'table':
      root.append(renderTable(payload));
      break;
    case 'timeline':
      root.append(renderTimeline(payload));
      break;
    case 'unknown':
      root.append(el('pre', `${PREFIX}-unknown`, JSON.stringify(payload.original, null, 2)));
      break;
  }
  const ready = Promise.all(pending).then(() => undefined);
  return { node: root, ready };
}

/** Sets the view of a rendered display (used by its toggle and by the palette command). */
export function setView(root: HTMLElement, view: View): void {
  root.dataset.view = view;
  for (const toggle of root.querySelectorAll<HTMLButtonElement>(`.${PREFIX}-viewToggle`)) {
    toggle.textContent = view === 'compact' ? 'Expand all' : 'Compact';
    toggle.setAttribute('aria-pressed', String(view === 'expanded'));
  }
  for (const card of root.querySelectorAll<HTMLElement>(`.${PREFIX}-card`)) {
    card.classList.remove('jp-mod-open', 'jp-mod-closed');
    syncExpanded(card);
  }
}

function viewOf(card: HTMLElement): View {
  const root = card.closest<HTMLElement>(`.${PREFIX}-root`);
  return root?.dataset.view === 'expanded' ? 'expanded' : 'compact';
}

/** Whether a card's body shows: its own choice when it has one, else the view's. */
export function isOpen(card: HTMLElement): boolean {
  if (card.classList.contains('jp-mod-open')) {
    return true;
  }
  if (card.classList.contains('jp-mod-closed')) {
    return false;
  }
  return viewOf(card) === 'expanded';
}

function syncExpanded(card: HTMLElement): void {
  const header = card.querySelector<HTMLElement>(`.${PREFIX}-cardHeader`);
  header?.setAttribute('aria-expanded', String(isOpen(card)));
}

function toggleCard(card: HTMLElement): void {
  const open = isOpen(card);
  card.classList.remove('jp-mod-open', 'jp-mod-closed');
  card.classList.add(open ? 'jp-mod-closed' : 'jp-mod-open');
  syncExpanded(card);
}

function viewToggle(context: RenderContext): HTMLButtonElement {
  const button = el('button', `${PREFIX}-viewToggle jp-Button jp-mod-minimal jp-mod-small`);
  button.type = 'button';
  button.textContent = context.view === 'compact' ? 'Expand all' : 'Compact';
  button.setAttribute('aria-pressed', String(context.view === 'expanded'));
  button.addEventListener('click', () => {
    const root = button.closest<HTMLElement>(`.${PREFIX}-root`);
    if (!root) {
      return;
    }
    const next: View = root.dataset.view === 'expanded' ? 'compact' : 'expanded';
    setView(root, next);
    context.onViewChange?.(next);
  });
  return button;
}

// ── batches and cards ──────────────────────────────────────────────────────────────────

function renderBatch(
  payload: BatchPayload,
  context: RenderContext,
  pending: Promise<void>[]
): HTMLElement {
  const { calls } = payload;
  const group = el('div', `${PREFIX}-batch`);
  group.dataset.batch = String(payload.batch);
  const concurrent = calls.length > 1;
  group.classList.toggle('jp-mod-concurrent', concurrent);
  if (concurrent) {
    const header = el('div', `${PREFIX}-batchHeader`);
    const label = el('span', `${PREFIX}-batchLabel`);
    label.textContent =
      `Batch ${payload.batch} · ${calls.length} calls ran concurrently`;
    header.append(label);
    const span = batchSpan(calls);
    const work = totalDuration(calls);
    if (span !== null) {
      const timing = el('span', `${PREFIX}-batchTiming`);
      timing.textContent =
        `${formatDuration(span)} wall` +
        (work !== null && work > span ? ` · ${formatDuration(work)} of work` : '');
      header.append(timing);
    }
    header.append(viewToggle(context));
    group.append(header);
  }
  const origin = Math.min(...calls.map(c => c.started ?? Infinity));
  const span = batchSpan(calls);
  for (const call of calls) {
    const card = renderCard(call, context, pending);
    if (concurrent && span !== null && span > 0 && call.started !== null && call.ended !== null) {
      card.querySelector(`.${PREFIX}-cardBody`)?.prepend(
        timingBar((call.started - origin) / span, (call.ended - call.started) / span)
      );
    }
    group.append(card);
  }
  return group;
}

function timingBar(start: number, width: number): HTMLElement {
  const track = el('div', `${PREFIX}-timingTrack`);
  track.title = 'when this call ran within its batch';
  const bar = el('div', `${PREFIX}-timingBar`);
  bar.style.left = `${Math.max(0, Math.min(1, start)) * 100}%`;
  bar.style.width = `${Math.max(0.01, Math.min(1, width)) * 100}%`;
  track.append(bar);
  return track;
}

function decisionWord(behavior: string): string {
  switch (behavior) {
    case 'allow':
      return 'allowed';
    case 'deny':
      return 'denied';
    case 'ask':
      return 'asked';
    default:
      return behavior;
  }
}

/** One tool call card. */
export function renderCard(
  call: Call,
  context: RenderContext,
  pending: Promise<void>[] = []
): HTMLElement {
  const card = el('div', `${PREFIX}-card`);
  card.dataset.status = call.status;
  if (call.toolUseId) {
    card.dataset.toolUseId = call.toolUseId;
  }

  const header = el('div', `${PREFIX}-cardHeader`);
  header.setAttribute('role', 'button');
  header.tabIndex = 0;
  const mark = el('span', `${PREFIX}-statusMark`, STATUS_MARK[call.status]);
  mark.title = call.status;
  header.append(mark, el('span', `${PREFIX}-name`, call.name));
  if (call.summary) {
    const summary = el('code', `${PREFIX}-summary`, call.summary);
    summary.title = call.summary;
    header.append(summary);
  }
  header.append(el('span', `${PREFIX}-spacer`));
  if (call.persistedPath) {
    header.append(el('span', `${PREFIX}-badge ${PREFIX}-badgePersisted`, 'saved'));
  }
  if (call.decision?.behavior) {
    const badge = el(
      'span',
      `${PREFIX}-badge ${PREFIX}-badgeDecision`,
      decisionWord(call.decision.behavior)
    );
    badge.dataset.behavior = call.decision.behavior;
    badge.title = call.decision.reason;
    header.append(badge);
  }
  header.append(el('span', `${PREFIX}-statusLabel`, call.status));
  const duration = formatDuration(call.duration);
  if (duration) {
    header.append(el('span', `${PREFIX}-duration`, duration));
  }
  header.addEventListener('click', () => toggleCard(card));
  header.addEventListener('keydown', event => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      toggleCard(card);
    }
  });
  card.append(header);

  const body = el('div', `${PREFIX}-cardBody`);
  if (call.decision && (call.decision.reason || call.decision.source)) {
    const reason = el('div', `${PREFIX}-decision`);
    const word = decisionWord(call.decision.behavior) || 'decided';
    reason.append(el('span', `${PREFIX}-decisionLabel`, `${word[0].toUpperCase()}${word.slice(1)}: `));
    reason.append(el('span', `${PREFIX}-decisionReason`, call.decision.reason));
    if (call.decision.source) {
      reason.append(el('span', `${PREFIX}-decisionSource`, ` (${call.decision.source})`));
    }
    body.append(reason);
  }
  if (call.progress && (call.status === 'running' || call.status === 'queued')) {
    body.append(el('div', `${PREFIX}-progress`, call.progress));
  }
  if (call.persistedPath) {
    body.append(renderPersisted(call, context, pending));
  } else if (call.result) {
    body.append(renderResult(call, call.result, context, pending));
  }
  if (body.childElementCount) {
    card.append(body);
  } else {
    card.classList.add('jp-mod-empty');
  }
  syncExpanded(card);
  return card;
}

function renderResult(
  call: Call,
  text: string,
  context: RenderContext,
  pending: Promise<void>[]
): HTMLElement {
  const box = el('div', `${PREFIX}-result`);
  box.classList.toggle('jp-mod-error', call.status === 'error' || call.status === 'denied');
  const numbered = splitNumbered(text);
  const code = numbered ? numbered.code : text;
  const language = call.status === 'done' ? guessLanguage(call, code) : null;
  const pre = el('pre', `${PREFIX}-code`);
  if (numbered) {
    const gutter = el('pre', `${PREFIX}-gutter`, numbered.numbers.join('\n'));
    gutter.setAttribute('aria-hidden', 'true');
    const lines = el('div', `${PREFIX}-numbered`);
    lines.append(gutter, pre);
    box.append(lines);
  } else {
    box.append(pre);
  }
  pre.textContent = code;
  if (language) {
    pre.dataset.language = language;
    if (context.highlight) {
      pending.push(
        context.highlight(code, language, pre).catch(() => {
          pre.textContent = code; // highlighting is a nicety: plain text stays
        })
      );
    }
  }
  return box;
}

function renderPersisted(
  call: Call,
  context: RenderContext,
  pending: Promise<void>[]
): HTMLElement {
  const path = call.persistedPath ?? '';
  const box = el('div', `${PREFIX}-persisted`);
  const line = el('div', `${PREFIX}-persistedInfo`);
  const size =
    call.persistedSize ??
    (call.originalSize !== null ? formatChars(call.originalSize) : 'large output');
  line.append(el('span', `${PREFIX}-persistedSize`, `Full output: ${size}, saved to `));
  line.append(el('code', `${PREFIX}-persistedPath`, path));
  box.append(line);

  const open = el('button', `${PREFIX}-open jp-Button jp-mod-styled jp-mod-accept`, 'Open full output');
  open.type = 'button';
  open.title = path;
  const status = el('span', `${PREFIX}-openStatus`);
  const openPersisted = context.openPersisted;
  if (!openPersisted) {
    open.disabled = true;
    open.title = 'Opening files needs JupyterLab.';
  } else {
    open.addEventListener('click', () => {
      status.textContent = '';
      openPersisted(path, open).catch((reason: unknown) => {
        status.textContent = reason instanceof Error ? reason.message : String(reason);
      });
    });
  }
  const actions = el('div', `${PREFIX}-persistedActions`);
  actions.append(open, status);
  box.append(actions);

  const details = el('details', `${PREFIX}-preview`);
  details.append(el('summary', `${PREFIX}-previewSummary`, 'Preview'));
  details.append(renderResult(call, persistedPreview(call.result), context, pending));
  box.append(details);
  return box;
}

// ── live panel, footer, notices, tables, timeline ──────────────────────────────────────

function renderLive(
  root: HTMLElement,
  payload: LivePayload,
  context: RenderContext,
  pending: Promise<void>[]
): void {
  if (!payload.calls.length) {
    root.classList.add('jp-mod-empty');
    return;
  }
  const list = el('div', `${PREFIX}-live`);
  for (const call of payload.calls) {
    list.append(renderCard(call, context, pending));
  }
  root.append(list);
}

function renderFooter(payload: FooterPayload): HTMLElement {
  const footer = el('div', `${PREFIX}-footer`);
  const parts = [`${payload.toolCalls} tool call${payload.toolCalls === 1 ? '' : 's'}`];
  if (payload.modelRequests) {
    parts.push(`${payload.modelRequests} model request${payload.modelRequests === 1 ? '' : 's'}`);
  }
  if (payload.stopReason) {
    parts.push(`stop: ${payload.stopReason}`);
  }
  const input = payload.usage.input_tokens;
  const output = payload.usage.output_tokens;
  if (input !== undefined || output !== undefined) {
    parts.push(`${input ?? 0} in / ${output ?? 0} out tokens`);
  }
  if (payload.costUsd !== null) {
    parts.push(`$${payload.costUsd.toFixed(4)}`);
  }
  const duration = formatDuration(payload.duration);
  if (duration) {
    parts.push(duration);
  }
  footer.textContent = parts.join(' · ');
  return footer;
}

function renderNotice(payload: NoticePayload): HTMLElement {
  const notice = el('div', `${PREFIX}-notice`);
  notice.dataset.level = payload.level;
  notice.append(el('pre', '', payload.text));
  return notice;
}

function renderTable(payload: TablePayload): HTMLElement {
  const table = el('table', `${PREFIX}-table`);
  table.dataset.table = payload.table;
  if (payload.title) {
    table.append(el('caption', '', payload.title));
  }
  const head = el('thead');
  const headRow = el('tr');
  for (const column of payload.columns) {
    headRow.append(el('th', '', column));
  }
  head.append(headRow);
  const body = el('tbody');
  for (const row of payload.rows) {
    const tr = el('tr');
    for (const value of row) {
      tr.append(el('td', '', value));
    }
    body.append(tr);
  }
  table.append(head, body);
  return table;
}

function renderTimeline(payload: TimelinePayload): HTMLElement {
  const box = el('div', `${PREFIX}-timeline`);
  const timed = payload.calls.filter(c => c.start !== null && c.end !== null);
  if (!timed.length) {
    box.textContent = 'no tool calls yet';
    return box;
  }
  const origin = Math.min(...timed.map(c => c.start as number));
  const span = Math.max(Math.max(...timed.map(c => c.end as number)) - origin, 1e-3);
  box.append(el('div', `${PREFIX}-timelineTitle`, `tool calls over ${formatDuration(span)}`));
  for (const call of timed) {
    const row = el('div', `${PREFIX}-timelineRow`);
    row.dataset.batch = String(call.batch);
    row.append(el('span', `${PREFIX}-timelineLabel`, `#${call.batch} ${call.name}`));
    const start = ((call.start as number) - origin) / span;
    const width = ((call.end as number) - (call.start as number)) / span;
    row.append(timingBar(start, width));
    box.append(row);
  }
  return box;
}
