/**
 * The main-area tabs for saved results, both read through the notebook's kernel over the
 * comm target `jupyter_toolhost.results`: the read-only viewer of one result ("Open full
 * output", and "Open" in the list) and the list of saved results ("Agent: open session
 * folder" when the server hides `.toolhost/`).
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';

import { LIST_CLASS, ResultList } from './resultlist';
import {
  NO_KERNEL,
  RESULTS_TARGET,
  type ResultChunk,
  type SavedResult,
  requestChunk,
  requestList
} from './results';
import { ResultView, VIEWER_CLASS } from './viewer';

/** The kernel of a notebook, or null. */
export function kernelOf(panel: NotebookPanel | null) {
  return panel?.sessionContext.session?.kernel ?? null;
}

function kernelOrThrow(panel: NotebookPanel) {
  const kernel = kernelOf(panel);
  if (!kernel) {
    throw new Error(NO_KERNEL);
  }
  return kernel;
}

/** One chunk of a persisted result, read by the kernel of `panel` over a new comm. */
export async function readChunk(panel: NotebookPanel, path: string, offset: number): Promise<ResultChunk> {
  return requestChunk(kernelOrThrow(panel).createComm(RESULTS_TARGET), { path, offset });
}

/** The saved results of the sessions of `panel`'s kernel, newest first. */
export async function listResults(panel: NotebookPanel): Promise<SavedResult[]> {
  return requestList(kernelOrThrow(panel).createComm(RESULTS_TARGET));
}

let tabs = 0;

function addTab(app: JupyterFrontEnd, widget: MainAreaWidget, kind: string): void {
  widget.id = `toolhost-${kind}-${++tabs}-${Date.now()}`;
  widget.title.closable = true;
  app.shell.add(widget, 'main', { mode: 'split-right' });
  app.shell.activateById(widget.id);
}

/**
 * Reads the saved result at `path` (as the kernel reported it) through `panel`'s kernel and
 * shows it in a read-only tab. Rejects with a message to show.
 */
export async function openResult(app: JupyterFrontEnd, panel: NotebookPanel, path: string): Promise<void> {
  const first = await readChunk(panel, path, 0);
  const content = new ResultView(first, offset => readChunk(panel, first.path, offset));
  const widget = new MainAreaWidget({ content });
  widget.addClass(VIEWER_CLASS);
  widget.title.label = first.name;
  widget.title.caption = `${first.shownPath} (read-only)`;
  addTab(app, widget, 'result');
}

const lists = new Map<string, MainAreaWidget<ResultList>>();

/**
 * Shows the saved results of `panel`'s kernel in an "Agent results" tab (one per notebook:
 * shown again and refreshed when already open); each row opens its result read-only.
 */
export function showResultList(app: JupyterFrontEnd, panel: NotebookPanel): Promise<void> {
  const open = lists.get(panel.id);
  if (open && !open.isDisposed) {
    app.shell.activateById(open.id);
    return open.content.refresh();
  }
  const content = new ResultList(
    () => listResults(panel),
    path => openResult(app, panel, path)
  );
  const widget = new MainAreaWidget({ content });
  widget.addClass(LIST_CLASS);
  widget.title.label = 'Agent results';
  widget.title.caption = `Saved tool results of ${panel.title.label}, read through its kernel`;
  lists.set(panel.id, widget);
  widget.disposed.connect(() => {
    if (lists.get(panel.id) === widget) {
      lists.delete(panel.id);
    }
  });
  addTab(app, widget, 'results');
  return content.refresh();
}
