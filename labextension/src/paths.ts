/**
 * Where a persisted result lies for the Jupyter server: the kernel reports the path it
 * wrote (absolute, or relative to its working directory); JupyterLab opens files by a
 * path relative to the server root.
 */

function normalize(parts: string[]): string[] | null {
  const out: string[] = [];
  for (const part of parts) {
    if (part === '' || part === '.') {
      continue;
    }
    if (part === '..') {
      if (!out.length) {
        return null;
      }
      out.pop();
    } else {
      out.push(part);
    }
  }
  return out;
}

function isAbsolute(path: string): boolean {
  return path.startsWith('/') || /^[A-Za-z]:\//.test(path);
}

/** Options for `serverPath`. */
export interface ServerPathOptions {
  /** The server's root directory, absolute (JupyterLab's page config `serverRoot`). */
  serverRoot: string;
  /** The notebook's directory relative to the server root: the kernel's working directory. */
  kernelDir: string;
}

/**
 * The server-relative path of `persisted`, or null when it lies outside the server root
 * (then JupyterLab cannot open it).
 */
export function serverPath(
  persisted: string,
  { serverRoot, kernelDir }: ServerPathOptions
): string | null {
  const path = persisted.replace(/\\/g, '/');
  if (isAbsolute(path)) {
    const root = normalize(serverRoot.replace(/\\/g, '/').split('/'));
    const full = normalize(path.split('/'));
    if (!root || !full || !isAbsolute(serverRoot.replace(/\\/g, '/'))) {
      return null;
    }
    const caseless = /^[A-Za-z]:$/.test(root[0] ?? '');
    const same = (a: string, b: string) =>
      caseless ? a.toLowerCase() === b.toLowerCase() : a === b;
    if (full.length <= root.length || !root.every((part, i) => same(part, full[i]))) {
      return null;
    }
    return full.slice(root.length).join('/');
  }
  const joined = normalize([...kernelDir.split('/'), ...path.split('/')]);
  return joined && joined.length ? joined.join('/') : null;
}

/** The directory part of a server path ('' for the root). */
export function dirname(path: string): string {
  const index = path.lastIndexOf('/');
  return index < 0 ? '' : path.slice(0, index);
}
