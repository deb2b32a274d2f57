/**
 * DOM helpers shared by the displays: element creation, action buttons with a status
 * line beside them, and the bar that shows when a call ran within its batch.
 */

import { formatNumber, formatWithin } from './format';

/** The prefix of every class name the cards use. */
export const PREFIX = 'jp-Toolhost';

/** A new element with an optional class name and text (text only: never markup). */
export function el<K extends keyof HTMLElementTagNameMap>(
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

/** Options for `actionButton`. */
export interface ActionOptions {
  /** Class names of the button (besides JupyterLab's button classes). */
  className: string;
  /** Class name of the status span beside it. */
  statusClass: string;
  /** Runs the action; a rejection's message shows in the status span. */
  run?: (from: HTMLButtonElement) => Promise<void>;
  /** The button's tooltip. */
  title?: string;
  /** The tooltip of the disabled button when there is no `run`. */
  unavailable: string;
  /** Shown in the status span while the action runs. */
  busy?: string;
}

/**
 * A button and a status span beside it: while the action runs the button is disabled,
 * and when it fails the status says why.
 */
export function actionButton(label: string, options: ActionOptions): [HTMLButtonElement, HTMLElement] {
  const button = el('button', `${options.className} jp-Button jp-mod-styled jp-mod-accept`, label);
  button.type = 'button';
  const status = el('span', `${PREFIX}-actionStatus ${options.statusClass}`);
  status.setAttribute('role', 'status');
  const run = options.run;
  if (!run) {
    button.disabled = true;
    button.title = options.unavailable;
    return [button, status];
  }
  if (options.title) {
    button.title = options.title;
  }
  button.addEventListener('click', () => {
    button.disabled = true;
    status.textContent = options.busy ?? '';
    status.dataset.state = 'busy';
    run(button)
      .then(() => {
        status.textContent = '';
        delete status.dataset.state;
      })
      .catch((reason: unknown) => {
        status.textContent = reason instanceof Error ? reason.message : String(reason);
        status.dataset.state = 'error';
      })
      .finally(() => {
        button.disabled = false;
      });
  });
  return [button, status];
}

/**
 * When a call ran within a span of time: a thin bar on a track, labelled with the seconds
 * ("0.00–0.41 s of 0.41 s") so it does not read as a progress bar. Offsets are seconds
 * from the span's start.
 */
export function timingRow(
  start: number,
  end: number,
  span: number,
  waits: { start: number; end: number; what: string }[] = []
): HTMLElement {
  const row = el('div', `${PREFIX}-timing`);
  const track = el('div', `${PREFIX}-timingTrack`);
  track.setAttribute('aria-hidden', 'true');
  const place = (part: HTMLElement, from: number, to: number): HTMLElement => {
    const left = span > 0 ? from / span : 0;
    const width = span > 0 ? (to - from) / span : 1;
    part.style.left = `${Math.max(0, Math.min(1, left)) * 100}%`;
    part.style.width = `${Math.max(0.01, Math.min(1, width)) * 100}%`;
    return part;
  };
  track.append(place(el('div', `${PREFIX}-timingBar`), start, end));
  // A wait for a person is drawn over the bar as a wait (hatched), never as the call running.
  for (const wait of waits) {
    const part = place(el('div', `${PREFIX}-timingWait`), wait.start, wait.end);
    part.dataset.what = wait.what;
    part.title = `waited ${formatNumber(Math.max(0, wait.end - wait.start), 'seconds')} for ${wait.what}`;
    track.append(part);
  }
  const label = el('span', `${PREFIX}-timingLabel`, formatWithin(start, end, span));
  label.title = 'when this call ran, in seconds from the start of its batch';
  row.append(track, label);
  return row;
}
