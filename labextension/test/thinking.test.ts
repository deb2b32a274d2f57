import { afterEach, describe, expect, it } from 'vitest';

import { renderPayload } from '../src/cards';
import { renderFooter } from '../src/displays';
import { type FooterPayload, type ThinkingPayload, readPayload } from '../src/payload';
import { OMITTED_LINE, REDACTED_LINE, followNewest, forgetOpenedThinking } from '../src/thinking';

function section(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    kind: 'thinking',
    key: 'session-1:0:1',
    response: 1,
    live: false,
    characters: 26,
    blocks: [{ kind: 'text', text: 'Let me look at the files.\n' }],
    ...fields
  };
}

function render(data: unknown): HTMLElement {
  const rendered = renderPayload(readPayload(data), { view: 'compact' });
  document.body.replaceChildren(rendered.node);
  return rendered.node;
}

const q = (selector: string, root: ParentNode = document) =>
  root.querySelector<HTMLElement>(selector);
const qa = (selector: string, root: ParentNode = document) =>
  Array.from(root.querySelectorAll<HTMLElement>(selector));

afterEach(() => forgetOpenedThinking());

describe('the thinking payload', () => {
  it('reads blocks, counts and flags, tolerating junk', () => {
    const payload = readPayload(
      section({
        live: 'yes',
        characters: 'many',
        blocks: [{ kind: 'text', text: 'abc' }, { kind: 'weird' }, 7, { kind: 'redacted', text: '' }]
      })
    ) as ThinkingPayload;
    expect(payload.kind).toBe('thinking');
    expect(payload.live).toBe(false);
    expect(payload.characters).toBe(3); // counted from the text when the number is junk
    expect(payload.blocks.map(b => b.kind)).toEqual(['text', 'omitted', 'redacted']);
  });
});

describe('the Thinking section', () => {
  it('is collapsed, with a header that counts the characters and the text inside', () => {
    const root = render(section());
    const details = q('details.jp-Toolhost-thinkingSection', root) as HTMLDetailsElement;
    expect(details).not.toBeNull();
    expect(details.open).toBe(false);
    expect(details.hasAttribute('open')).toBe(false);
    expect(q('.jp-Toolhost-thinkingSummary', root)?.textContent).toBe(
      'Thinking · 26 characters'
    );
    expect(q('.jp-Toolhost-thinkingText', root)?.textContent).toBe('Let me look at the files.\n');
    expect(root.classList.contains('jp-mod-empty')).toBe(false);
  });

  it('never turns thinking text into markup', () => {
    const hostile = '<img src=x onerror="window.pwned=1"></details><details open>';
    const root = render(section({ blocks: [{ kind: 'text', text: hostile }], characters: 60 }));
    expect(q('img', root)).toBeNull();
    expect(qa('details', root)).toHaveLength(1);
    expect(q('.jp-Toolhost-thinkingText', root)?.textContent).toBe(hostile);
  });

  it('says when the API redacted the thinking or returned no text, without a section', () => {
    const root = render(
      section({ characters: 0, blocks: [{ kind: 'redacted', text: '' }, { kind: 'omitted', text: '' }] })
    );
    expect(q('details', root)).toBeNull();
    expect(qa('.jp-Toolhost-thinkingNote', root).map(n => [n.dataset.thinking, n.textContent])).toEqual([
      ['redacted', REDACTED_LINE],
      ['omitted', OMITTED_LINE]
    ]);
  });

  it('shows text and a redacted line side by side', () => {
    const root = render(
      section({ blocks: [{ kind: 'text', text: 'first' }, { kind: 'redacted', text: '' }], characters: 5 })
    );
    expect(q('details .jp-Toolhost-thinkingText', root)?.textContent).toBe('first');
    expect(qa('.jp-Toolhost-thinkingNote', root).map(n => n.textContent)).toEqual([REDACTED_LINE]);
  });

  it('streams: live header, a section even before text comes, and the empty display renders nothing', () => {
    let root = render(section({ live: true, characters: 0, blocks: [{ kind: 'streaming', text: '' }] }));
    expect(q('.jp-Toolhost-thinking', root)?.classList.contains('jp-mod-live')).toBe(true);
    expect(q('.jp-Toolhost-thinkingSummary', root)?.textContent).toBe('Thinking…');
    root = render(section({ live: true, characters: 1234, blocks: [{ kind: 'streaming', text: 'x'.repeat(1234) }] }));
    expect(q('.jp-Toolhost-thinkingSummary', root)?.textContent).toBe('Thinking… · 1,234 characters');
    root = render(section({ key: '', live: true, characters: 0, blocks: [] }));
    expect(root.classList.contains('jp-mod-empty')).toBe(true);
    expect(q('.jp-Toolhost-thinking', root)).toBeNull();
  });

  it('stays open once a person opened it: through redraws and into the final display', async () => {
    let root = render(section({ live: true, blocks: [{ kind: 'streaming', text: 'a' }], characters: 1 }));
    const details = q('details', root) as HTMLDetailsElement;
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
    root = render(section({ live: true, blocks: [{ kind: 'streaming', text: 'ab' }], characters: 2 }));
    expect((q('details', root) as HTMLDetailsElement).open).toBe(true);
    root = render(section({ live: false, blocks: [{ kind: 'text', text: 'abc' }], characters: 3 }));
    expect((q('details', root) as HTMLDetailsElement).open).toBe(true);
    // another section (another key) starts collapsed
    root = render(section({ key: 'session-1:0:2' }));
    expect((q('details', root) as HTMLDetailsElement).open).toBe(false);
    // closing it again is remembered too
    root = render(section());
    const again = q('details', root) as HTMLDetailsElement;
    again.open = false;
    again.dispatchEvent(new Event('toggle'));
    root = render(section());
    expect((q('details', root) as HTMLDetailsElement).open).toBe(false);
  });

  it('scrolls an open live section to its newest text', () => {
    const root = render(section({ live: true, blocks: [{ kind: 'streaming', text: 'line\n'.repeat(500) }], characters: 2500 }));
    const details = q('details', root) as HTMLDetailsElement;
    details.open = true;
    const text = q('.jp-Toolhost-thinkingText', root) as HTMLElement;
    Object.defineProperty(text, 'scrollHeight', { value: 4321, configurable: true });
    followNewest(document);
    expect(text.scrollTop).toBe(4321);
  });
});

describe('the footer', () => {
  const footer = (
    usage: Record<string, number>,
    cassette: FooterPayload['cassette'] = null
  ): FooterPayload => ({
    kind: 'footer',
    toolCalls: 1,
    modelRequests: 2,
    stopReason: 'end_turn',
    usage,
    costUsd: 0.0123,
    duration: null,
    parts: [],
    times: [],
    replayed: cassette !== null,
    cassette
  });

  it('shows the thinking tokens as part of the output tokens', () => {
    const text = renderFooter(footer({ input_tokens: 900, output_tokens: 1500, thinking_tokens: 1200 })).textContent;
    expect(text).toContain('900 in / 1,500 out tokens (incl. 1,200 thinking)');
  });

  it('says nothing of thinking without thinking tokens, or with scripted answers', () => {
    expect(renderFooter(footer({ input_tokens: 9, output_tokens: 5 })).textContent).not.toContain('thinking');
    expect(
      renderFooter(footer({ input_tokens: 9, output_tokens: 5, thinking_tokens: 3 }, 'scripted')).textContent
    ).not.toContain('thinking');
    expect(
      renderFooter(footer({ input_tokens: 9, output_tokens: 5, thinking_tokens: 3 }, 'recorded')).textContent
    ).toContain('(incl. 3 thinking)');
  });
});
