/**
 * Builds the DOM for one toolhost display: tool call cards (status, duration, decision
 * reason, the code a call ran, live progress, sub-agent calls, checklists, result),
 * concurrent batches grouped, persisted results as collapsible previews with an
 * "Open full output" action; other displays come from `displays.ts`, the Thinking
 * section from `thinking.ts`.
 *
 * Pure DOM: no JupyterLab imports, so it is unit-tested in a plain DOM. What needs
 * JupyterLab (highlighting, opening results, inserting cells) comes in through
 * `RenderContext`.
 */

import { renderChecklist } from './checklist';
import { renderFooter, renderNotice, renderTable, renderTimeline } from './displays';
import { PREFIX, actionButton, el, timingRow } from './dom';
import { renderThinking } from './thinking';
import {
  STATUS_MARK,
  batchSpan,
  formatChars,
  formatDuration,
  formatElapsed,
  formatPercent,
  guessLanguage,
  persistedPreview,
  splitNumbered,
  totalDuration
} from './format';
import type { BatchPayload, Call, CodeBlock, LivePayload, Payload } from './payload';

/** Compact: one line per call, details on click. Expanded: every card open. */
export type View = 'compact' | 'expanded';

/** What the cards need from their host. */
export interface RenderContext {
  /** The view a new display starts in. */
  view: View;
  /** Highlights `code` as `language` into `into` (which already holds it as plain text). */
  highlight?: (code: string, language: string, into: HTMLElement) => Promise<void>;
  /**
   * Opens a persisted result (the path the kernel reported) in a read-only tab; `from` is
   * the button, so the host can tell which notebook it is in. Rejects with a message to show.
   */
  openPersisted?: (path: string, from: HTMLElement) => Promise<void>;
  /**
   * Inserts `source` as a code cell below the cell whose output holds `from` (the button),
   * and makes it the active cell. Rejects with a message to show.
   */
  insertCell?: (source: string, from: HTMLElement) => Promise<void>;
  /** Called when the view of this display is switched by its toggle. */
  onViewChange?: (view: View) => void;
}

/** A rendered display: its node and a promise for highlighting still in flight. */
export interface Rendered {
  node: HTMLElement;
  ready: Promise<void>;
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
    case 'thinking': {
      const section = renderThinking(payload);
      if (section) {
        root.append(section);
      } else {
        root.classList.add('jp-mod-empty');
      }
      break;
    }
    case 'answer':
      root.classList.add('jp-mod-empty');
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

/**
 * Whether a card's body shows: its own choice when it has one, else open when the card
 * opens by default (a checklist is the point of its call), else the view's.
 */
export function isOpen(card: HTMLElement): boolean {
  if (card.classList.contains('jp-mod-open')) {
    return true;
  }
  if (card.classList.contains('jp-mod-closed')) {
    return false;
  }
  return card.classList.contains(DEFAULT_OPEN) || viewOf(card) === 'expanded';
}

const DEFAULT_OPEN = `${PREFIX}-defaultOpen`;

function syncExpanded(card: HTMLElement): void {
  const header = card.querySelector<HTMLElement>(`:scope > .${PREFIX}-cardHeader`);
  header?.setAttribute('aria-expanded', String(isOpen(card)));
}

/**
 * Carries what a person chose in `before` (a display about to be drawn again, when the
 * kernel updates it: a batch learns what its results cost) over to `after`: the view of
 * the display, which cards they opened or closed, and which previews they opened.
 */
export function keepChoices(before: Element | null, after: HTMLElement): void {
  if (!(before instanceof HTMLElement)) {
    return;
  }
  const view = before.dataset.view;
  if ((view === 'compact' || view === 'expanded') && after.dataset.view !== view) {
    setView(after, view);
  }
  const cards = new Map<string, HTMLElement>();
  for (const card of after.querySelectorAll<HTMLElement>(`.${PREFIX}-card[data-tool-use-id]`)) {
    cards.set(card.dataset.toolUseId ?? '', card);
  }
  for (const old of before.querySelectorAll<HTMLElement>(`.${PREFIX}-card[data-tool-use-id]`)) {
    const card = cards.get(old.dataset.toolUseId ?? '');
    if (!card) {
      continue;
    }
    for (const choice of ['jp-mod-open', 'jp-mod-closed']) {
      if (old.classList.contains(choice)) {
        card.classList.remove('jp-mod-open', 'jp-mod-closed');
        card.classList.add(choice);
        syncExpanded(card);
      }
    }
    const opened = [...old.querySelectorAll('details')].map(d => d.open);
    card.querySelectorAll('details').forEach((details, index) => {
      if (index < opened.length) {
        details.open = opened[index];
      }
    });
  }
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
  const span = batchSpan(calls);
  if (concurrent) {
    const header = el('div', `${PREFIX}-batchHeader`);
    header.append(
      el('span', `${PREFIX}-batchLabel`, `Batch ${payload.batch} · ${calls.length} calls ran concurrently`)
    );
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
  for (const call of calls) {
    const timed = concurrent && span !== null && span > 0 && call.started !== null && call.ended !== null;
    const within = timed
      ? {
          start: (call.started as number) - origin,
          end: (call.ended as number) - origin,
          span: span as number,
          waits: call.waits.map(w => ({ start: w.asked - origin, end: w.answered - origin, what: w.what }))
        }
      : undefined;
    group.append(renderCard(call, context, pending, within));
  }
  return group;
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

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** Where a call ran within its batch, in seconds from the batch's start. */
export interface Within {
  start: number;
  end: number;
  span: number;
  /** The call's waits for a person, in the same seconds. */
  waits?: { start: number; end: number; what: string }[];
}

function isActive(call: Call): boolean {
  return call.status === 'running' || call.status === 'queued';
}

function renderHeader(call: Call, card: HTMLElement): HTMLElement {
  const header = el('div', `${PREFIX}-cardHeader`);
  header.setAttribute('role', 'button');
  header.tabIndex = 0;
  const mark = el('span', `${PREFIX}-statusMark`, STATUS_MARK[call.status]);
  mark.title = call.status;
  header.append(mark, el('span', `${PREFIX}-name`, call.name));
  const source = call.code?.source ?? '';
  const firstLine = source.split('\n', 1)[0];
  const summaryText = call.summary || (source.includes('\n') ? `${firstLine} …` : firstLine);
  if (summaryText) {
    const summary = el('code', `${PREFIX}-summary`, summaryText);
    summary.title = source || call.summary;
    header.append(summary);
  }
  header.append(el('span', `${PREFIX}-spacer`));
  if (call.children.length) {
    header.append(el('span', `${PREFIX}-childCount`, plural(call.children.length, 'call', 'calls')));
  }
  if (call.displaysBelow > 0) {
    header.append(
      el('span', `${PREFIX}-displaysBelow`, `${plural(call.displaysBelow, 'plot/table', 'plots/tables')} below ↓`)
    );
  }
  if (call.persistedPath) {
    header.append(el('span', `${PREFIX}-badge ${PREFIX}-badgePersisted`, 'saved'));
  }
  const word = call.decision?.behavior ? decisionWord(call.decision.behavior) : '';
  if (call.decision && word) {
    const badge = el('span', `${PREFIX}-badge ${PREFIX}-badgeDecision`, word);
    badge.dataset.behavior = call.decision.behavior;
    badge.title = call.decision.reason;
    header.append(badge);
  }
  if (word !== call.label) {
    const label = el('span', `${PREFIX}-statusLabel`, call.label);
    label.dataset.label = call.label;
    header.append(label);
  }
  const elapsed = call.status === 'running' ? formatElapsed(call.elapsed) : '';
  const duration = formatDuration(call.duration);
  if (elapsed) {
    const span = el('span', `${PREFIX}-elapsed`, elapsed);
    span.title = `${call.label} for ${elapsed}`;
    header.append(span);
  } else if (duration) {
    const span = el('span', `${PREFIX}-duration`, duration);
    span.title = 'run time (a wait for a person is not counted)';
    header.append(span);
  }
  if (!isActive(call) && call.waited > 0) {
    // As the kernel writes it ("waited 8.0 s for your answer"), one span per kind of wait.
    const texts = call.waitedText.length
      ? call.waitedText
      : [`waited ${formatDuration(call.waited)} for approval`];
    for (const text of texts) {
      const wait = el('span', `${PREFIX}-approvalTime`, text);
      wait.title = 'how long the call waited for a person (not part of its run time)';
      header.append(wait);
    }
  }
  if (!isActive(call) && call.tokensText) {
    const tokens = el('span', `${PREFIX}-tokens`, call.tokensText);
    tokens.dataset.measured = String(call.tokensMeasured);
    tokens.title =
      'tokens this result adds to every later request (' +
      (call.tokensMeasured
        ? 'measured from the usage of the request that first carried it)'
        : 'estimated: about 4 characters a token, an image width × height / 750)');
    header.append(tokens);
  }
  header.addEventListener('click', () => toggleCard(card));
  header.addEventListener('keydown', event => {
    if (event.target === header && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      toggleCard(card);
    }
  });
  return header;
}

/** What a running call shows whatever the view: progress text and bar, its last output lines. */
function renderLiveParts(call: Call): HTMLElement | null {
  if (!isActive(call)) {
    return null;
  }
  const box = el('div', `${PREFIX}-cardLive`);
  if (call.progress) {
    box.append(el('div', `${PREFIX}-progress`, call.progress));
  }
  if (call.fraction !== null) {
    const row = el('div', `${PREFIX}-progressRow`);
    const bar = el('progress', `${PREFIX}-progressBar`);
    bar.max = 1;
    bar.value = call.fraction;
    const label = el('span', `${PREFIX}-progressLabel`, formatPercent(call.fraction));
    bar.setAttribute('aria-label', `${call.name} progress`);
    row.append(bar, label);
    box.append(row);
  }
  if (call.tail.length) {
    const tail = el('pre', `${PREFIX}-tail`, call.tail.join('\n'));
    tail.title = 'the last lines of output so far';
    box.append(tail);
  }
  return box.childElementCount ? box : null;
}

/** One tool call card; `within` places it in its batch. Sub-agent calls nest inside. */
export function renderCard(
  call: Call,
  context: RenderContext,
  pending: Promise<void>[] = [],
  within?: Within
): HTMLElement {
  const card = el('div', `${PREFIX}-card`);
  card.dataset.status = call.status;
  card.dataset.label = call.label;
  if (call.toolUseId) {
    card.dataset.toolUseId = call.toolUseId;
  }
  card.append(renderHeader(call, card));
  const live = renderLiveParts(call);
  if (live) {
    card.append(live);
  }

  const body = el('div', `${PREFIX}-cardBody`);
  if (within) {
    body.append(timingRow(within.start, within.end, within.span, within.waits));
  }
  if (call.decision && (call.decision.reason || call.decision.source)) {
    // The header's badge already says allowed/denied: the body says why.
    const reason = el('div', `${PREFIX}-decision`);
    reason.append(el('span', `${PREFIX}-decisionLabel`, 'Why: '));
    reason.append(el('span', `${PREFIX}-decisionReason`, call.decision.reason));
    if (call.decision.source) {
      reason.append(el('span', `${PREFIX}-decisionSource`, ` (${call.decision.source})`));
    }
    body.append(reason);
  }
  if (call.checklist) {
    body.append(renderChecklist(call.checklist));
  }
  if (call.code) {
    body.append(renderCode(call.code, context, pending));
  }
  if (call.children.length) {
    const children = el('div', `${PREFIX}-children`);
    for (const child of call.children) {
      children.append(renderCard(child, context, pending));
    }
    body.append(children);
  }
  if (!isActive(call) && call.tail.length) {
    // A stopped call keeps the newest lines it printed before the stop.
    const kept = el('div', `${PREFIX}-stoppedTail`);
    kept.append(el('div', `${PREFIX}-stoppedLabel`, 'printed before the stop'));
    kept.append(el('pre', `${PREFIX}-tail`, call.tail.join('\n')));
    body.append(kept);
  }
  if (call.persistedPath) {
    body.append(renderPersisted(call, context, pending));
  } else if (call.result) {
    body.append(renderResult(call, call.result, context, pending));
    if (call.cut) {
      body.append(el('div', `${PREFIX}-cut`, call.cut));
    }
  }
  if (body.childElementCount) {
    card.append(body);
  } else {
    card.classList.add('jp-mod-empty');
  }
  // A checklist is the point of its call; a running sub-agent's calls are what to watch;
  // what a stopped call printed before the stop is why a person opens it anyway.
  const stoppedWithOutput = !isActive(call) && call.tail.length > 0;
  if (call.checklist || (isActive(call) && call.children.length) || stoppedWithOutput) {
    card.classList.add(DEFAULT_OPEN);
  }
  syncExpanded(card);
  return card;
}

function renderCode(code: CodeBlock, context: RenderContext, pending: Promise<void>[]): HTMLElement {
  const box = el('div', `${PREFIX}-codeBlock`);
  const bar = el('div', `${PREFIX}-codeHeader`);
  bar.append(el('span', `${PREFIX}-codeLanguage`, code.language || 'code'));
  if (code.insertable) {
    const insertCell = context.insertCell;
    const [button, status] = actionButton('Insert as cell below', {
      className: `${PREFIX}-insert`,
      statusClass: `${PREFIX}-insertStatus`,
      title: 'Insert this code as a new cell below this one',
      unavailable: 'Inserting cells needs a JupyterLab notebook.',
      run: insertCell ? from => insertCell(code.source, from) : undefined
    });
    bar.append(button, status);
  }
  const pre = el('pre', `${PREFIX}-codeSource`, code.source);
  box.append(bar, pre);
  if (code.language) {
    pre.dataset.language = code.language;
    if (context.highlight) {
      pending.push(
        context.highlight(code.source, code.language, pre).catch(() => {
          pre.textContent = code.source;
        })
      );
    }
  }
  return box;
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
    call.saved?.size ||
    call.persistedSize ||
    (call.originalSize !== null ? formatChars(call.originalSize) : 'large output');
  line.append(el('span', `${PREFIX}-persistedSize`, `Full output: ${size}, saved to `));
  // The kernel's way to name it (relative to the notebook's folder): never the machine's
  // absolute path, which is only asked for, through the kernel.
  const named = call.saved?.path || path.split(/[\\/]/).slice(-2).join('/');
  const shownPath = el('code', `${PREFIX}-persistedPath`, named);
  shownPath.title = named;
  line.append(shownPath);
  box.append(line);

  const openPersisted = context.openPersisted;
  const [open, status] = actionButton('Open full output', {
    className: `${PREFIX}-open`,
    statusClass: `${PREFIX}-openStatus`,
    title: `Open ${named} in a read-only tab`,
    unavailable: 'Opening saved output needs JupyterLab.',
    busy: 'Reading it through the kernel…',
    run: openPersisted ? from => openPersisted(path, from) : undefined
  });
  const actions = el('div', `${PREFIX}-persistedActions`);
  actions.append(open, status);
  box.append(actions);

  const details = el('details', `${PREFIX}-preview`);
  details.append(el('summary', `${PREFIX}-previewSummary`, 'Preview'));
  details.append(renderResult(call, persistedPreview(call.result), context, pending));
  if (call.saved?.cut) {
    // Under the scrolling preview, not inside it: a person sees it without scrolling.
    details.append(el('div', `${PREFIX}-cut`, call.saved.cut));
  }
  box.append(details);
  return box;
}

// ── live panel ─────────────────────────────────────────────────────────────────────────

function renderLive(
  root: HTMLElement,
  payload: LivePayload,
  context: RenderContext,
  pending: Promise<void>[]
): void {
  const checklist = payload.checklist?.length ? payload.checklist : null;
  if (!payload.calls.length && !checklist) {
    root.classList.add('jp-mod-empty');
    return;
  }
  const list = el('div', `${PREFIX}-live`);
  // "running · 12 s" or "Waiting for you · 8 s", as the kernel's text writes it: the clock
  // is the kernel's (the run without the waits, or the wait's own).
  const status = [payload.status ?? '', formatElapsed(payload.elapsed)].filter(Boolean).join(' · ');
  if (status) {
    list.append(el('div', `${PREFIX}-liveStatus`, status));
  }
  if (checklist) {
    list.append(renderChecklist(checklist));
  }
  for (const call of payload.calls) {
    list.append(renderCard(call, context, pending));
  }
  root.append(list);
}
