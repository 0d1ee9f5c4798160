/**
 * Syntax highlighting for code blocks: highlight.js grammars → a small tree → ANSI through chalk.
 * highlight.js's core and the grammars coding sessions show most load in the background after the
 * first frame (until then, and under NO_COLOR, code is shown plain). Any other of its 192 grammars
 * loads on first use, by name or alias (`highlight-languages.ts`): that block is plain until it
 * has loaded, a few milliseconds later. Loading all of them up front (lowlight's entry does)
 * cost the TUI ≈ 10 MB (issue 17, item 4).
 * @module
 */
import chalk from 'chalk';
import type { Emitter, HLJSApi, Language, LanguageFn } from 'highlight.js';
import { grammarFile } from './highlight-languages';

interface HastNode {
  type: string;
  value?: string;
  properties?: { className?: string[] };
  children?: HastNode[];
}
interface ParentNode extends HastNode {
  children: HastNode[];
}

/** Registered at start: what coding sessions show most. */
// biome-ignore format: a packed list reads better
const START_LANGUAGES: readonly string[] = [
  'bash', 'c', 'cpp', 'css', 'diff', 'go', 'ini', 'java', 'javascript', 'json', 'markdown',
  'plaintext', 'python', 'ruby', 'rust', 'shell', 'sql', 'typescript', 'xml', 'yaml',
];

let hljs: HLJSApi | undefined;
let loading: Promise<void> | undefined;
/** One load per grammar file, successful or not (at most 192). */
const grammars = new Map<string, Promise<boolean>>();

/** Start loading the core and the common grammars (idempotent). Resolves when highlighting is available. */
export function loadHighlighter(): Promise<void> {
  loading ??= (async () => {
    const core = (await import('highlight.js/lib/core')).default.newInstance();
    core.configure({ __emitter: TreeEmitter, classPrefix: 'hljs-' });
    const loaded = await Promise.all(START_LANGUAGES.map(importGrammar));
    START_LANGUAGES.forEach((name, i) => {
      const grammar = loaded[i];
      if (grammar) core.registerLanguage(name, grammar);
    });
    hljs = core;
  })().catch(() => {
    // Highlighting is a nicety: plain code is still correct.
  });
  return loading;
}

/**
 * Load and register the grammar of a language name or alias, with the grammars it embeds (xml's
 * `<script>`, php-template's php). Resolves false for a language highlight.js does not have.
 */
export async function loadLanguage(nameOrAlias: string): Promise<boolean> {
  await loadHighlighter();
  const core = hljs;
  const file = grammarFile(nameOrAlias);
  if (!core || !file) return false;
  if (core.getLanguage(file)) return true;
  let pending = grammars.get(file);
  if (!pending) {
    pending = importGrammar(file).then(async (grammar) => {
      if (!grammar) return false;
      core.registerLanguage(file, grammar);
      const language = core.getLanguage(file);
      if (language) await Promise.all([...subLanguages(language)].map(loadLanguage));
      return true;
    });
    grammars.set(file, pending);
  }
  return pending;
}

async function importGrammar(file: string): Promise<LanguageFn | undefined> {
  try {
    // `file` comes from the table of highlight.js's own grammar names, never from the text.
    const module: unknown = await import(`highlight.js/lib/languages/${file}`);
    return isGrammarModule(module) ? module.default : undefined;
  } catch {
    return undefined;
  }
}

function isGrammarModule(module: unknown): module is { default: LanguageFn } {
  return (
    typeof module === 'object' &&
    module !== null &&
    'default' in module &&
    typeof module.default === 'function'
  );
}

/** The languages a grammar embeds (`subLanguage` anywhere in its modes). */
function subLanguages(language: Language): Set<string> {
  const found = new Set<string>();
  const seen = new Set<object>();
  const visit = (mode: unknown): void => {
    if (typeof mode !== 'object' || mode === null || seen.has(mode)) return;
    seen.add(mode);
    if ('subLanguage' in mode) {
      const sub = mode.subLanguage;
      for (const name of Array.isArray(sub) ? sub : [sub]) if (typeof name === 'string') found.add(name);
    }
    for (const key of ['contains', 'variants', 'starts'] as const)
      if (key in mode) {
        const child: unknown = Reflect.get(mode, key);
        if (Array.isArray(child)) for (const c of child) visit(c);
        else visit(child);
      }
  };
  visit(language);
  return found;
}

const ALIASES: Record<string, string> = {
  ts: 'typescript',
  js: 'javascript',
  sh: 'bash',
  shell: 'bash',
  py: 'python',
  yml: 'yaml',
  rs: 'rust',
  md: 'markdown',
};

const STYLE: Record<string, (s: string) => string> = {
  keyword: chalk.magenta,
  built_in: chalk.cyan,
  type: chalk.cyan,
  literal: chalk.blue,
  number: chalk.yellow,
  string: chalk.green,
  regexp: chalk.red,
  comment: chalk.gray,
  doctag: chalk.gray,
  meta: chalk.gray,
  title: chalk.blue,
  'title.function': chalk.blue,
  'title.class': chalk.cyan,
  attr: chalk.yellow,
  attribute: chalk.yellow,
  variable: chalk.red,
  params: (s) => s,
  symbol: chalk.yellow,
  tag: chalk.red,
  name: chalk.red,
  addition: chalk.green,
  deletion: chalk.red,
  section: chalk.bold,
};

export function highlight(code: string, language: string | undefined): string {
  if (!hljs || chalk.level === 0 || !language) return code;
  const lang = ALIASES[language.toLowerCase()] ?? language.toLowerCase();
  if (!hljs.getLanguage(lang)) {
    // Plain this time; highlighted from the next render on, once its grammar has loaded.
    void loadLanguage(lang);
    return code;
  }
  try {
    const result = hljs.highlight(code, { language: lang, ignoreIllegals: true });
    if (result.errorRaised || !(result._emitter instanceof TreeEmitter)) return code;
    return render(result._emitter.root);
  } catch {
    return code;
  }
}

function render(node: HastNode): string {
  if (node.type === 'text') return node.value ?? '';
  const inner = (node.children ?? []).map(render).join('');
  const classes = node.properties?.className ?? [];
  for (const cls of classes) {
    const name = cls.replace(/^hljs-/, '').replace(/_$/, '');
    const style = STYLE[name] ?? STYLE[name.split('.')[0]];
    if (style) return style(inner);
  }
  return inner;
}

/**
 * Builds highlight.js's scopes as a tree (lowlight's emitter, which this replaces): a scope
 * `title.function` is an element with the classes `hljs-title` and `function_`, an embedded
 * language an element with its name as the class.
 */
class TreeEmitter implements Emitter {
  readonly root: ParentNode = { type: 'root', children: [] };
  private readonly stack: ParentNode[] = [this.root];
  private readonly prefix: string;

  constructor(options: { classPrefix?: string }) {
    this.prefix = options.classPrefix ?? 'hljs-';
  }

  private get current(): ParentNode {
    return this.stack[this.stack.length - 1];
  }

  addText(text: string): void {
    if (text === '') return;
    const children = this.current.children;
    const tail = children[children.length - 1];
    if (tail && tail.type === 'text') tail.value = (tail.value ?? '') + text;
    else children.push({ type: 'text', value: text });
  }

  startScope(name: string): void {
    this.openNode(name);
  }

  endScope(): void {
    this.closeNode();
  }

  /** What highlight.js calls for a mode's scope (startScope is the newer name). */
  openNode(name: string): void {
    const className = String(name)
      .split('.')
      .map((part, i) => (i ? part + '_'.repeat(i) : this.prefix + part));
    const child: ParentNode = { type: 'element', properties: { className }, children: [] };
    this.current.children.push(child);
    this.stack.push(child);
  }

  closeNode(): void {
    this.stack.pop();
  }

  __addSublanguage(other: Emitter, name: string): void {
    if (!(other instanceof TreeEmitter)) return;
    const results = other.root.children;
    if (name)
      this.current.children.push({ type: 'element', properties: { className: [name] }, children: results });
    else this.current.children.push(...results);
  }

  finalize(): void {}

  toHTML(): string {
    return '';
  }
}
