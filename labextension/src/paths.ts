/**
 * Server paths: the folder of a notebook, and whether the server shows the sessions folder
 * (saved results themselves are read through the kernel, see `results.ts`).
 */

import type { Contents } from '@jupyterlab/services';

/** Where the kernel keeps its sessions, relative to its working directory. */
export const SESSIONS_DIR = '.toolhost/sessions';

/** The directory part of a server path ('' for the root). */
export function dirname(path: string): string {
  const index = path.lastIndexOf('/');
  return index < 0 ? '' : path.slice(0, index);
}

/**
 * Whether the server's contents API shows `SESSIONS_DIR` under the directory `base`. Asked
 * by listing each parent (a stock server leaves dot-folders out of its listings), not by
 * asking for the folder itself, whose 404 would show as an error in the browser console.
 */
export async function serverShowsSessions(
  contents: Pick<Contents.IManager, 'get'>,
  base: string
): Promise<boolean> {
  let dir = base;
  try {
    for (const part of SESSIONS_DIR.split('/')) {
      const model = await contents.get(dir, { content: true });
      const items: Contents.IModel[] = Array.isArray(model.content) ? model.content : [];
      if (!items.some(item => item.name === part && item.type === 'directory')) {
        return false;
      }
      dir = dir ? `${dir}/${part}` : part;
    }
  } catch {
    return false;
  }
  return true;
}
