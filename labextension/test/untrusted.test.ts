/**
 * The extension draws text the model, tools and MCP servers wrote: it must never become
 * markup. JupyterLab hands a mime renderer the payload whether or not the output is
 * trusted (and outputs the kernel made in the session, or a saved notebook reopened, are
 * trusted), so every string is set as text (`dom.el`, `textContent`), never parsed.
 *
 * A source scan fails on any API that parses a string as HTML or renders Markdown; the
 * rendering tests put markup-shaped strings into every field of every payload kind and
 * check that no element, attribute or URL came of them.
 */

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { renderPayload } from '../src/cards';
import { readPayload } from '../src/payload';
import { batch, card } from './fixtures';

const SRC = join(__dirname, '..', 'src');

/** Ways a string becomes markup (or script) in a page. */
const SINKS = [
  /\.innerHTML\b/,
  /\.outerHTML\b/,
  /insertAdjacentHTML/,
  /document\.write/,
  /createContextualFragment/,
  /DOMParser/,
  /\bsrcdoc\b/,
  /renderMarkdown|renderHTML|renderSVG|renderLatex/,
  /\beval\s*\(|new Function\s*\(/,
  /setAttribute\(\s*['"]on/,
  /trusted:\s*true/
];

const ATTACKS = [
  '<img src=x onerror="window.__xss=1">',
  '<script>window.__xss=1</script>',
  '<details open ontoggle="window.__xss=1"><summary>s</summary></details>',
  '<svg onload="window.__xss=1"></svg>',
  '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
  '<a href="javascript:window.__xss=1">x</a>',
  '"><img src=x onerror=window.__xss=1>',
  "'><style>*{display:none}</style>",
  '<form action="javascript:window.__xss=1"><button>Allow</button></form>',
  '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=1">'
];
const ATTACK = ATTACKS.join('\n');

function everyElement(): Element[] {
  return Array.from(document.body.querySelectorAll('*'));
}

function madeFromPayload(): string[] {
  const found: string[] = [];
  for (const node of everyElement()) {
    const tag = node.tagName.toLowerCase();
    if (['img', 'script', 'iframe', 'svg', 'form', 'meta', 'style', 'a'].includes(tag)) {
      if (tag !== 'a' || (node.getAttribute('href') ?? '').includes('javascript')) {
        found.push(tag);
      }
    }
    for (const attribute of Array.from(node.attributes)) {
      if (attribute.name.startsWith('on') || attribute.name === 'srcdoc') {
        found.push(`${tag} ${attribute.name}`);
      }
    }
  }
  return found;
}

function show(data: unknown): void {
  const rendered = renderPayload(readPayload(data), { view: 'expanded' });
  document.body.replaceChildren(rendered.node);
}

describe('nothing a payload holds becomes markup', () => {
  it('has no API in its source that parses a string as HTML', () => {
    const offending: string[] = [];
    for (const name of readdirSync(SRC).filter(file => file.endsWith('.ts'))) {
      readFileSync(join(SRC, name), 'utf8')
        .split('\n')
        .forEach((line, index) => {
          for (const sink of SINKS) {
            if (sink.test(line)) {
              offending.push(`${name}:${index + 1}: ${line.trim()}`);
            }
          }
        });
    }
    expect(offending).toEqual([]);
  });

  it('draws a card whose every field is an attack as text', () => {
    const hostile = card({
      tool_use_id: ATTACK,
      name: ATTACK,
      summary: ATTACK,
      result: ATTACK,
      persisted_path: ATTACK,
      progress: ATTACK,
      language: ATTACK,
      code: ['python', ATTACK],
      tail: [ATTACK, ATTACK],
      decision: { behavior: 'deny', reason: { detail: ATTACK, source: ATTACK }, message: ATTACK },
      checklist: [{ content: ATTACK, status: 'in_progress', active_form: ATTACK }],
      children: [card({ name: ATTACK, summary: ATTACK, result: ATTACK })]
    });
    show(batch([hostile, card({ status: 'error', result: ATTACK })]));
    expect(madeFromPayload()).toEqual([]);
    expect(document.body.textContent).toContain('<script>window.__xss=1</script>');
    expect((window as unknown as { __xss?: number }).__xss).toBeUndefined();
  });

  it('draws notices, thinking, tables, the live panel and unknown payloads as text', () => {
    const payloads: unknown[] = [
      { version: 1, kind: 'notice', level: 'error', text: ATTACK },
      {
        version: 1,
        kind: 'thinking',
        key: ATTACK,
        response: 1,
        live: false,
        blocks: [{ kind: 'text', text: ATTACK }]
      },
      {
        version: 1,
        kind: 'live',
        status: ATTACK,
        elapsed: 1,
        calls: [card({ status: 'running', summary: ATTACK, tail: [ATTACK] })],
        checklist: [{ content: ATTACK, status: 'pending', active_form: ATTACK }]
      },
      { version: 1, kind: ATTACK, title: ATTACK, columns: [ATTACK], rows: [[ATTACK]] },
      {
        version: 1,
        kind: 'footer',
        tool_calls: 1,
        model_requests: 1,
        stop_reason: ATTACK,
        usage: {}
      },
      { version: 1, kind: 'timeline', calls: [{ name: ATTACK, batch: 1, start: 0, end: 1 }] },
      { version: 1, kind: ATTACK }
    ];
    for (const data of payloads) {
      show(data);
      expect(madeFromPayload(), JSON.stringify(data).slice(0, 60)).toEqual([]);
    }
    expect((window as unknown as { __xss?: number }).__xss).toBeUndefined();
  });
});
