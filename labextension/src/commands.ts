/**
 * The palette commands: interrupt the active notebook's kernel, show the agent's tools,
 * open the session folder, and switch the cards between compact and expanded.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import { OutputAreaModel, SimplifiedOutputArea } from '@jupyterlab/outputarea';

import { SESSIONS_DIR, dirname, serverShowsSessions } from './paths';
import type { ViewPreference } from './renderer';
import { kernelOf, showResultList } from './tabs';

export { SESSIONS_DIR };

/** Command ids (the palette shows their labels under "Agent"). */
export const CommandIDs = {
  interrupt: 'toolhost:interrupt',
  showTools: 'toolhost:show-tools',
  openSessionFolder: 'toolhost:open-session-folder',
  toggleView: 'toolhost:toggle-view'
} as const;

/**
 * The code "Agent: show tools" runs in the kernel: it loads the IPython extension when a
 * notebook has not yet (a no-op otherwise, and only the last line's output shows).
 */
export const SHOW_TOOLS_CODE =
  'get_ipython().extension_manager.load_extension("jupyter_toolhost")\n%agent tools';

/** Adds the commands to the application; returns their ids for the palette. */
export function addCommands(
  app: JupyterFrontEnd,
  notebooks: INotebookTracker,
  preference: ViewPreference
): string[] {
  const { commands } = app;
  const hasKernel = () => kernelOf(notebooks.currentWidget) !== null;

  commands.addCommand(CommandIDs.interrupt, {
    label: 'Agent: interrupt',
    caption: "Interrupt the active notebook's kernel (stops a running %%agent cell)",
    isEnabled: hasKernel,
    execute: async () => {
      await kernelOf(notebooks.currentWidget)?.interrupt();
    }
  });

  commands.addCommand(CommandIDs.showTools, {
    label: 'Agent: show tools',
    caption: 'Run `%agent tools` in the active kernel and show the result in a panel',
    isEnabled: hasKernel,
    execute: async () => {
      const panel = notebooks.currentWidget;
      const kernel = kernelOf(panel);
      if (!panel || !kernel) {
        return;
      }
      // Untrusted: whatever HTML the panel shows (tool descriptions come from MCP servers)
      // goes through JupyterLab's sanitizer, as well as the kernel's own cleaning.
      const area = new SimplifiedOutputArea({
        model: new OutputAreaModel({ trusted: false }),
        rendermime: panel.content.rendermime
      });
      area.addClass('jp-ToolhostTools');
      const widget = new MainAreaWidget({ content: area });
      widget.id = `toolhost-tools-${Date.now()}`;
      widget.title.label = `Agent tools: ${panel.title.label}`;
      widget.title.closable = true;
      app.shell.add(widget, 'main', { mode: 'split-right' });
      // Not a cell: nothing is stored in the notebook or the kernel's history.
      area.future = kernel.requestExecute({
        code: SHOW_TOOLS_CODE,
        silent: false,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false
      });
      await area.future.done;
    }
  });

  commands.addCommand(CommandIDs.openSessionFolder, {
    label: 'Agent: open session folder',
    caption:
      `Show ${SESSIONS_DIR}/ beside the active notebook in the file browser, or, when the ` +
      "server hides it, list its saved results through the notebook's kernel",
    isEnabled: () => notebooks.currentWidget !== null,
    execute: async () => {
      const panel = notebooks.currentWidget;
      if (!panel) {
        return;
      }
      const base = dirname(panel.context.path);
      const path = base ? `${base}/${SESSIONS_DIR}` : SESSIONS_DIR;
      // A stock server hides dot-folders (and a remote kernel's disk is not the server's):
      // then the kernel lists its saved results.
      const shown = await serverShowsSessions(app.serviceManager.contents, base);
      if (shown) {
        await commands.execute('filebrowser:go-to-path', { path });
      } else {
        await showResultList(app, panel);
      }
    }
  });

  commands.addCommand(CommandIDs.toggleView, {
    label: 'Agent: toggle compact/expanded tool cards',
    isToggled: () => preference.view === 'expanded',
    execute: () => {
      preference.view = preference.view === 'expanded' ? 'compact' : 'expanded';
    }
  });

  return Object.values(CommandIDs);
}
