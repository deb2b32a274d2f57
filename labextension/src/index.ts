/**
 * The jupyter-toolhost JupyterLab extension: registers the renderer for
 * `application/vnd.jupyter.toolhost.v1+json` and the "Agent: ..." palette commands, and
 * gives the cards what needs JupyterLab: highlighting, reading saved outputs through the
 * notebook's kernel into a read-only tab, inserting a call's code as a cell.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { watchPrompts } from './approvalkeys';
import { addCommands } from './commands';
import { ViewPreference, rendererFactory } from './renderer';
import { openResult } from './tabs';

export { MIME_TYPE } from './payload';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-toolhost:plugin',
  description: 'Tool call cards for %%agent cells, and agent commands.',
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  optional: [ICommandPalette, IEditorLanguageRegistry],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null,
    languages: IEditorLanguageRegistry | null
  ) => {
    const preference = new ViewPreference();

    const highlight = languages
      ? async (code: string, language: string, into: HTMLElement) => {
          const found = languages.findBest(language);
          if (!found) {
            return;
          }
          const scratch = document.createElement('span');
          await languages.highlight(code, found, scratch);
          into.replaceChildren(...Array.from(scratch.childNodes));
          into.classList.add('cm-s-jupyter');
        }
      : undefined;

    /** The notebook whose output holds `from` (else the current one: an output view). */
    const panelOf = (from: HTMLElement): NotebookPanel | null =>
      notebooks.find(candidate => candidate.node.contains(from)) ?? notebooks.currentWidget;

    const openPersisted = async (path: string, from: HTMLElement) => {
      const panel = panelOf(from);
      if (!panel) {
        throw new Error('This output is not in a notebook, so there is no kernel to read it.');
      }
      await openResult(app, panel, path);
    };

    const insertCell = async (source: string, from: HTMLElement) => {
      const panel = notebooks.find(candidate => candidate.node.contains(from));
      const notebook = panel?.content;
      const model = notebook?.model;
      if (!panel || !notebook || !model) {
        throw new Error('This output is not in a notebook, so there is no cell to insert below.');
      }
      if (model.readOnly) {
        throw new Error('This notebook is read-only.');
      }
      const index = notebook.widgets.findIndex(cell => cell.node.contains(from));
      if (index < 0) {
        throw new Error('Could not find the cell this output belongs to.');
      }
      model.sharedModel.insertCell(index + 1, { cell_type: 'code', source });
      notebook.deselectAll();
      notebook.activeCellIndex = index + 1;
      notebook.mode = 'command';
      app.shell.activateById(panel.id);
      const cell = notebook.widgets[index + 1];
      if (cell) {
        await notebook.scrollToCell(cell);
      }
    };

    rendermime.addFactory(
      rendererFactory({ preference, highlight, openPersisted, insertCell }),
      20
    );

    watchPrompts(document.body); // access keys, Enter and Escape for approval prompts

    const ids = addCommands(app, notebooks, preference);
    if (palette) {
      for (const command of ids) {
        palette.addItem({ command, category: 'Agent' });
      }
    }
  }
};

export default plugin;
