/**
 * The displays that are not tool call cards: the per-cell footer, notices, the tables of
 * `%agent` subcommands, and the timeline.
 */

import { PREFIX, el, timingRow } from './dom';
import { formatDuration, formatNumber } from './format';
import type { FooterPayload, NoticePayload, TablePayload, TimelinePayload } from './payload';

/**
 * The footer: counts, tokens and cost, and time of one cell. With a cassette it reads the
 * same when the cassette records and when it replays (as the `text/plain` beside it does):
 * a recording from the API shows the usage it recorded, "as recorded — a replay spends
 * nothing"; scripted answers show no token counts (none were real).
 */
export function renderFooter(payload: FooterPayload): HTMLElement {
  const footer = el('div', `${PREFIX}-footer`);
  // The kernel writes the footer's words (the same strings as its text and HTML, in the same
  // order); a footer saved by an older kernel is written here the same way.
  const parts = payload.parts.length ? [...payload.parts] : olderFooterParts(payload);
  const times = payload.parts.length ? payload.times : [formatDuration(payload.duration)];
  parts.push(...times.filter(Boolean));
  footer.textContent = parts.join(' · ');
  footer.classList.toggle('jp-mod-replayed', payload.replayed);
  return footer;
}

function olderFooterParts(payload: FooterPayload): string[] {
  const parts = [`${formatNumber(payload.toolCalls)} tool call${payload.toolCalls === 1 ? '' : 's'}`];
  if (payload.modelRequests) {
    const requests = formatNumber(payload.modelRequests);
    parts.push(`${requests} model request${payload.modelRequests === 1 ? '' : 's'}`);
  }
  const input = payload.usage.input_tokens;
  const output = payload.usage.output_tokens;
  const scripted = payload.cassette === 'scripted';
  if (scripted) {
    parts.push('scripted answers — no tokens spent');
  } else if (input !== undefined || output !== undefined) {
    // Thinking tokens are part of the output tokens (and billed as output), not on top.
    const thinking = payload.usage.thinking_tokens;
    const of = thinking ? ` (incl. ${formatNumber(thinking, 'tokens')} thinking)` : '';
    parts.push(
      `${formatNumber(input ?? 0, 'tokens')} in / ${formatNumber(output ?? 0, 'tokens')} out tokens${of}`
    );
  } else if (payload.replayed) {
    // A replay that reported no usage (an older cassette): nothing was spent.
    parts.push('replayed — no tokens spent');
  }
  if (!scripted && payload.costUsd !== null) {
    parts.push(`≈ ${formatNumber(payload.costUsd, 'usd')}`);
  }
  if (payload.cassette === 'recorded') {
    parts.push('as recorded — a replay spends nothing');
  }
  if (payload.stopReason) {
    parts.push(`stop: ${payload.stopReason}`);
  }
  return parts;
}

export function renderNotice(payload: NoticePayload): HTMLElement {
  const notice = el('div', `${PREFIX}-notice`);
  notice.dataset.level = payload.level;
  notice.append(el('pre', '', payload.text));
  return notice;
}

export function renderTable(payload: TablePayload): HTMLElement {
  const table = renderOneTable(payload);
  if (!payload.below.length) {
    return table;
  }
  const box = el('div', `${PREFIX}-tables`);
  box.append(table, ...payload.below.map(renderTable));
  return box;
}

function renderOneTable(payload: TablePayload): HTMLElement {
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

export function renderTimeline(payload: TimelinePayload): HTMLElement {
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
    row.append(timingRow((call.start as number) - origin, (call.end as number) - origin, span));
    box.append(row);
  }
  return box;
}
