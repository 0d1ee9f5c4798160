/**
 * Syntax highlighting for code blocks: lowlight (highlight.js grammars) → ANSI through chalk.
 * The grammars cost ~100 ms to load, so they load in the background after the first frame;
 * until then (and under NO_COLOR) code is shown plain.
 * @module
 */
import chalk from 'chalk';

interface HastNode {
  type: string;
  value?: string;
  properties?: { className?: string[] };
  children?: HastNode[];
}
interface Highlighter {
  highlight(language: string, value: string): HastNode;
  registered(language: string): boolean;
}

let highlighter: Highlighter | undefined;
let loading: Promise<void> | undefined;

/** Start loading the grammars (idempotent). Resolves when highlighting is available. */
export function loadHighlighter(): Promise<void> {
  loading ??= import('lowlight')
    .then((m) => {
      highlighter = m.createLowlight(m.common) as unknown as Highlighter;
    })
    .catch(() => {
      // Highlighting is a nicety: plain code is still correct.
    });
  return loading;
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
  if (!highlighter || chalk.level === 0 || !language) return code;
  const lang = ALIASES[language.toLowerCase()] ?? language.toLowerCase();
  if (!highlighter.registered(lang)) return code;
  try {
    return render(highlighter.highlight(lang, code));
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
