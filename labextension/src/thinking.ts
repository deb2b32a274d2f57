/**
 * The "Thinking" section of a model response: its extended thinking under a collapsed
 * `<details>`, a line for each redacted block or block that came without text.
 *
 * While the response thinks, the kernel redraws a live section (`live: true`) in place;
 * when the response goes on, it empties that display and shows the final section in a new
 * one. Both carry the same `key`, and whether a person opened a section is remembered by
 * that key, so the section stays open through every redraw and into its final display.
 * Sections start collapsed.
 */

import { PREFIX, el } from './dom';
import { formatNumber } from './format';
import type { ThinkingPayload } from './payload';

export const REDACTED_LINE =
  'Thinking redacted by the API (encrypted; passed back to the model unread).';
export const OMITTED_LINE =
  'Thinking text not returned by the API (display: omitted; only its signature).';

/** The sections a person opened (or closed again), by key, for this page's life. */
const chosen = new Map<string, boolean>();

/** Forget what was opened (for tests). */
export function forgetOpenedThinking(): void {
  chosen.clear();
}

/** `Thinking · 1,234 characters`, `Thinking…` while it streams. */
export function thinkingHeader(payload: ThinkingPayload): string {
  const head = payload.live ? 'Thinking…' : 'Thinking';
  return payload.characters
    ? `${head} · ${formatNumber(payload.characters)} characters`
    : head;
}

/** The section, or null when it has nothing to show (the empty display of a live one). */
export function renderThinking(payload: ThinkingPayload): HTMLElement | null {
  if (!payload.blocks.length) {
    return null;
  }
  const box = el('div', `${PREFIX}-thinking`);
  box.dataset.response = String(payload.response);
  box.classList.toggle('jp-mod-live', payload.live);
  const texts = payload.blocks.filter(
    b => (b.kind === 'text' || b.kind === 'streaming') && b.text
  );
  if (payload.live || texts.length) {
    const details = el('details', `${PREFIX}-thinkingSection`);
    details.append(el('summary', `${PREFIX}-thinkingSummary`, thinkingHeader(payload)));
    for (const block of texts) {
      details.append(el('div', `${PREFIX}-thinkingText`, block.text));
    }
    details.open = payload.key ? (chosen.get(payload.key) ?? false) : false;
    if (payload.key) {
      details.addEventListener('toggle', () => {
        chosen.set(payload.key, details.open);
        if (details.open && payload.live) {
          followNewest(box);
        }
      });
    }
    box.append(details);
  }
  for (const block of payload.blocks) {
    if (block.kind === 'redacted' || block.kind === 'omitted') {
      const line = block.kind === 'redacted' ? REDACTED_LINE : OMITTED_LINE;
      const note = el('div', `${PREFIX}-thinkingNote`, line);
      note.dataset.thinking = block.kind;
      box.append(note);
    }
  }
  return box;
}

/** Scrolls a live section's text to its newest line (call once it is on the page). */
export function followNewest(root: ParentNode): void {
  for (const text of root.querySelectorAll<HTMLElement>(
    `.${PREFIX}-thinking.jp-mod-live details[open] .${PREFIX}-thinkingText`
  )) {
    text.scrollTop = text.scrollHeight;
  }
}
