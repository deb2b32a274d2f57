/**
 * Keys for the approval prompts the kernel shows as ipywidgets (`.toolhost-approval`).
 *
 * ipywidgets' buttons have no access keys and a prompt knows nothing of the keyboard, so
 * this module gives them both, from the classes the kernel puts on the buttons
 * (`toolhost-choice-allow`, `-cell`, `-always`, `-deny`, `-edit`):
 *
 * - each button gets an access key, named in its tooltip by the kernel: the `accesskey`
 *   attribute (for assistive technology), and Alt+key handled here while the focus is in
 *   the prompt, since browsers differ on the modifiers and JupyterLab may bind them;
 * - while the focus is inside a prompt, Enter allows once (unless the focus is on a button,
 *   which Enter presses, or in a text box, where Enter types or submits that box) and
 *   Escape denies (from anywhere in the prompt, the reason box included: what is typed
 *   there goes with the Deny).
 *
 * Nothing here decides: each key clicks the prompt's own button, so the kernel receives the
 * same message as from a mouse, and a prompt that is already decided (its buttons
 * disabled) ignores keys.
 */

export const PROMPT_CLASS = 'toolhost-approval';
export const ACCESS_KEYS: Record<string, string> = {
  allow: 'o',
  cell: 'c',
  always: 'a',
  deny: 'd',
  edit: 'e'
};
const READY = 'toolhostKeys';

/** The enabled button of `choice` inside `prompt`, if any. */
function choiceButton(prompt: Element, choice: string): HTMLButtonElement | null {
  const found = prompt.querySelector<HTMLButtonElement>(`button.toolhost-choice-${choice}`);
  return found && !found.disabled ? found : null;
}

function typing(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLTextAreaElement ||
    (target instanceof HTMLInputElement && target.type !== 'checkbox') ||
    (target instanceof HTMLElement && target.isContentEditable)
  );
}

/** What a key pressed in `prompt` does: the button it clicks, or null. */
export function keyTarget(
  prompt: Element,
  key: string,
  target: EventTarget | null,
  alt = false
): HTMLButtonElement | null {
  if (alt) {
    const choice = Object.keys(ACCESS_KEYS).find(name => ACCESS_KEYS[name] === key.toLowerCase());
    return choice ? choiceButton(prompt, choice) : null;
  }
  if (key === 'Escape') {
    return choiceButton(prompt, 'deny');
  }
  if (key === 'Enter' && !typing(target) && !(target instanceof HTMLButtonElement)) {
    return choiceButton(prompt, 'allow');
  }
  return null;
}

/** Give `prompt` its access keys and its Enter and Escape (once). */
export function equipPrompt(prompt: HTMLElement): void {
  for (const [choice, key] of Object.entries(ACCESS_KEYS)) {
    const button = prompt.querySelector<HTMLButtonElement>(`button.toolhost-choice-${choice}`);
    if (button && button.accessKey !== key) {
      button.accessKey = key;
    }
  }
  if (prompt.dataset[READY]) {
    return;
  }
  prompt.dataset[READY] = '1';
  if (!prompt.hasAttribute('tabindex')) {
    prompt.tabIndex = -1; // a click on the prompt's text gives it the focus
  }
  prompt.addEventListener('keydown', event => {
    if (event.ctrlKey || event.metaKey || (event.shiftKey && !event.altKey)) {
      return;
    }
    const button = keyTarget(prompt, event.key, event.target, event.altKey);
    if (button) {
      event.preventDefault();
      event.stopPropagation(); // not JupyterLab's: Enter would edit a cell, Escape leave it
      button.click();
    }
  });
}

/** Watch `root` for prompts and equip each as it appears (buttons arrive one by one). */
export function watchPrompts(root: HTMLElement): MutationObserver {
  const equipAll = () => {
    for (const prompt of Array.from(root.getElementsByClassName(PROMPT_CLASS))) {
      equipPrompt(prompt as HTMLElement);
    }
  };
  const observer = new MutationObserver(equipAll);
  observer.observe(root, { childList: true, subtree: true });
  equipAll();
  return observer;
}
