/**
 * The jupyter-toolhost JupyterLab extension: registers the renderer for
 * `application/vnd.jupyter.toolhost.v1+json` and the "Agent: ..." palette commands.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { addCommands } from './commands';
import { dirname, serverPath } from './paths';
import { ViewPreference, rendererFactory } from './renderer';

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

    const openPersisted = async (path: string, from: HTMLElement) => {
      const panel = notebooks.find(candidate => candidate.node.contains(from));
      const target = serverPath(path, {
        serverRoot: PageConfig.getOption('serverRoot'),
        kernelDir: panel ? dirname(panel.context.path) : ''
      });
      if (target === null) {
        throw new Error(`${path} lies outside the Jupyter server root, so it cannot be opened here.`);
      }
      try {
        await app.serviceManager.contents.get(target, { content: false });
      } catch {
        throw new Error(
          `The server cannot read ${target}: it is gone, or the server hides dot-folders ` +
            '(start JupyterLab with --ContentsManager.allow_hidden=True).'
        );
      }
      await app.commands.execute('docmanager:open', { path: target, factory: 'Editor' });
    };

    rendermime.addFactory(rendererFactory({ preference, highlight, openPersisted }), 20);

    const ids = addCommands(app, notebooks, preference);
    if (palette) {
      for (const command of ids) {
        palette.addItem({ command, category: 'Agent' });
      }
    }
  }
};

export default plugin;
