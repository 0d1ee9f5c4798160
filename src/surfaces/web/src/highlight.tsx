/**
 * Code highlighting for the transcript: lowlight (highlight.js grammars) with a handful of
 * languages registered, rendered as spans with `hljs-*` classes (styled in styles.css). An
 * unknown language is shown plain.
 * @module
 */
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { createLowlight } from 'lowlight';
import type { ComponentChildren } from 'preact';

const lowlight = createLowlight({
  bash,
  css,
  diff,
  go,
  javascript,
  json,
  python,
  rust,
  typescript,
  xml,
  yaml,
});
lowlight.registerAlias({
  bash: ['sh', 'shell', 'zsh', 'console'],
  javascript: ['js', 'jsx', 'mjs', 'cjs'],
  typescript: ['ts', 'tsx', 'mts'],
  python: ['py'],
  rust: ['rs'],
  yaml: ['yml', 'toml'],
  xml: ['html', 'svg'],
  json: ['jsonc', 'json5'],
  diff: ['patch'],
});

interface HastNode {
  type: string;
  value?: string;
  properties?: { className?: unknown };
  children?: HastNode[];
}

export function highlightCode(code: string, language: string | undefined): ComponentChildren {
  const lang = language?.toLowerCase();
  if (!lang || !lowlight.registered(lang)) return code;
  try {
    return render(lowlight.highlight(lang, code) as unknown as HastNode, 'r');
  } catch {
    return code;
  }
}

export function languageOfPath(path: string): string | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  return ext && lowlight.registered(ext) ? ext : undefined;
}

function render(node: HastNode, key: string): ComponentChildren {
  if (node.type === 'text') return node.value ?? '';
  const children = (node.children ?? []).map((child, i) => render(child, `${key}.${i}`));
  if (node.type !== 'element') return children;
  const classes = node.properties?.className;
  const className = Array.isArray(classes) ? classes.join(' ') : undefined;
  return (
    <span key={key} class={className}>
      {children}
    </span>
  );
}
