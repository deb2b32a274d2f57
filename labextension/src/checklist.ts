/**
 * A checklist as a call (TodoWrite, Task tools) or the live panel reports it: one line per
 * item, marked pending, in progress or completed, under an "n/m done" header.
 */

import { PREFIX, el } from './dom';
import type { ChecklistItem, ChecklistStatus } from './payload';

/** The mark of each item status. */
export const CHECK_MARK: Record<ChecklistStatus, string> = {
  pending: '☐',
  in_progress: '◐',
  completed: '☑'
};

const STATUS_TEXT: Record<ChecklistStatus, string> = {
  pending: 'pending',
  in_progress: 'in progress',
  completed: 'completed'
};

/** The checklist: a header with how many items are done, then the items. */
export function renderChecklist(items: ChecklistItem[]): HTMLElement {
  const box = el('div', `${PREFIX}-checklistBox`);
  const done = items.filter(item => item.status === 'completed').length;
  box.append(el('div', `${PREFIX}-checklistHeader`, `${done}/${items.length} done`));
  const list = el('ul', `${PREFIX}-checklist`);
  for (const item of items) {
    const line = el('li', `${PREFIX}-checkItem`);
    line.dataset.status = item.status;
    const mark = el('span', `${PREFIX}-checkMark`, CHECK_MARK[item.status]);
    mark.title = STATUS_TEXT[item.status];
    mark.setAttribute('aria-label', STATUS_TEXT[item.status]);
    const shown = item.status === 'in_progress' && item.activeForm ? item.activeForm : item.content;
    const text = el('span', `${PREFIX}-checkText`, shown);
    if (shown !== item.content) {
      text.title = item.content;
    }
    line.append(mark, text);
    list.append(line);
  }
  box.append(list);
  return box;
}
