/**
 * The rendermime renderer for `application/vnd.jupyter.toolhost.v1+json`, and the shared
 * view preference (compact or expanded) that the palette command switches.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { type RenderContext, type View, keepChoices, renderPayload, setView } from './cards';
import { MIME_TYPE, readPayload } from './payload';
import { followNewest } from './thinking';

/** The view new displays start in; switching it re-renders every display on screen. */
export class ViewPreference {
  private _view: View = 'compact';
  private _changed = new Signal<this, View>(this);

  get view(): View {
    return this._view;
  }

  set view(view: View) {
    if (view !== this._view) {
      this._view = view;
      this._changed.emit(view);
    }
  }

  get changed(): Signal<this, View> {
    return this._changed;
  }
}

/** What the renderer gets from the plugin (JupyterLab services behind plain functions). */
export type RendererHost = Omit<RenderContext, 'view' | 'onViewChange'> & {
  preference: ViewPreference;
};

const CLASS = 'jp-ToolhostRenderer';

/** Renders one toolhost display into an output area. */
export class ToolhostRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly _options: IRenderMime.IRendererOptions,
    private readonly _host: RendererHost
  ) {
    super();
    this.addClass(CLASS);
    this._host.preference.changed.connect(this._onPreference, this);
  }

  /** Draws the display; resolves when highlighting is done. */
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const payload = readPayload(model.data[this._options.mimeType]);
    const rendered = renderPayload(payload, {
      ...this._host,
      view: this._host.preference.view
    });
    // An update of the same display (a batch's measured tokens) keeps what the person opened.
    keepChoices(this.node.firstElementChild, rendered.node);
    this.node.replaceChildren(rendered.node);
    this.toggleClass('jp-mod-empty', rendered.node.classList.contains('jp-mod-empty'));
    followNewest(this.node); // an open, streaming Thinking section shows its newest text
    await rendered.ready;
  }

  dispose(): void {
    if (!this.isDisposed) {
      Signal.disconnectReceiver(this);
    }
    super.dispose();
  }

  private _onPreference(_: ViewPreference, view: View): void {
    const root = this.node.firstElementChild;
    if (root instanceof HTMLElement) {
      setView(root, view);
    }
  }
}

/** The factory to register with the application's rendermime registry. */
export function rendererFactory(host: RendererHost): IRenderMime.IRendererFactory {
  return {
    safe: true, // builds DOM from text only: never injects HTML from the payload
    mimeTypes: [MIME_TYPE],
    defaultRank: 20, // ahead of text/html (50), so JupyterLab shows the cards
    createRenderer: options => new ToolhostRenderer(options, host)
  };
}
