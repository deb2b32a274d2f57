import { describe, expect, it } from 'vitest';

import { ACCESS_KEYS, keyTarget, watchPrompts } from '../src/approvalkeys';

/** A prompt as ipywidgets draws it: buttons with the kernel's classes, a reason box. */
function prompt(): HTMLElement {
  const root = document.createElement('div');
  root.className = 'toolhost-approval';
  for (const choice of ['allow', 'cell', 'always', 'deny', 'edit']) {
    const button = document.createElement('button');
    button.className = `jupyter-button toolhost-choice-${choice}`;
    button.textContent = choice;
    root.append(button);
  }
  const reason = document.createElement('input');
  reason.type = 'text';
  root.append(reason);
  return root;
}

function clicks(root: HTMLElement): string[] {
  const seen: string[] = [];
  for (const button of Array.from(root.querySelectorAll('button'))) {
    button.addEventListener('click', () => seen.push(button.textContent ?? ''));
  }
  return seen;
}

describe('approval keys', () => {
  it('gives each button its access key, also to buttons that arrive later', async () => {
    const host = document.createElement('div');
    document.body.append(host);
    const observer = watchPrompts(host);
    const shown = prompt();
    host.append(shown);
    await new Promise(resolve => setTimeout(resolve, 0));
    for (const [choice, key] of Object.entries(ACCESS_KEYS)) {
      const button = shown.querySelector<HTMLButtonElement>(`.toolhost-choice-${choice}`);
      expect(button?.accessKey).toBe(key);
    }
    observer.disconnect();
    host.remove();
  });

  it('Enter allows once and Escape denies, from the prompt', () => {
    const shown = prompt();
    const [reason] = Array.from(shown.querySelectorAll('input'));
    expect(keyTarget(shown, 'Enter', shown)?.textContent).toBe('allow');
    expect(keyTarget(shown, 'Escape', shown)?.textContent).toBe('deny');
    expect(keyTarget(shown, 'Escape', reason)?.textContent).toBe('deny');
    expect(keyTarget(shown, 'Enter', reason)).toBeNull(); // the box's own Enter denies
    expect(keyTarget(shown, 'Enter', shown.querySelector('.toolhost-choice-deny'))).toBeNull();
    expect(keyTarget(shown, 'a', shown)).toBeNull();
    expect(keyTarget(shown, 'c', reason, true)?.textContent).toBe('cell'); // Alt+C
    expect(keyTarget(shown, 'E', shown, true)?.textContent).toBe('edit');
    expect(keyTarget(shown, 'x', shown, true)).toBeNull();
  });

  it('a decided prompt ignores keys', () => {
    const shown = prompt();
    for (const button of Array.from(shown.querySelectorAll('button'))) {
      button.disabled = true;
    }
    expect(keyTarget(shown, 'Enter', shown)).toBeNull();
    expect(keyTarget(shown, 'Escape', shown)).toBeNull();
  });

  it('a key press clicks the button once and stops there', async () => {
    const host = document.createElement('div');
    document.body.append(host);
    const observer = watchPrompts(host);
    const shown = prompt();
    host.append(shown);
    await new Promise(resolve => setTimeout(resolve, 0));
    const seen = clicks(shown);
    let reachedPage = 0;
    host.addEventListener('keydown', () => (reachedPage += 1));
    shown.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    shown.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    shown.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: true, bubbles: true }));
    expect(seen).toEqual(['deny', 'allow']);
    expect(reachedPage).toBe(1); // only Shift+Enter went on to JupyterLab
    observer.disconnect();
    host.remove();
  });
});
