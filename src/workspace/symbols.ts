/**
 * Symbols from tree-sitter parse trees: functions, classes, methods, interfaces, types… with a
 * `name_path` (`UserService.save`: containers joined by dots) and a `symbol_key`
 * (`<file>::<name_path>::<kind>`, plus `::<n>` when overloads share it) that pins one definition.
 * Syntax only (no type information): precise about where definitions are, not about which
 * same-named identifier refers to which.
 *
 * Parsing is bounded (PARSE_LIMITS): the parse runs on svc's event loop, and a 50 MB one-line
 * bundle held it (and every other call) for over a minute with gigabytes of memory. A file over
 * the size, with a line over the length (minified code), or whose parse and walk run over the
 * time budget is not parsed: `SymbolParseSkipped` says which and why, for the result to show.
 * @module
 */
import type { Node, Tree } from 'web-tree-sitter';
import { SvcError } from '../errors';
import { type GrammarName, parserFor } from './tree-sitter';

export interface SymbolInfo {
  name: string;
  kind: string;
  name_path: string;
  symbol_key: string;
  /** Workspace-relative file. */
  path: string;
  /** 1-based, inclusive. */
  start_line: number;
  end_line: number;
  /** Nesting depth: 0 for top-level symbols. */
  depth: number;
}

/** A symbol with its character ranges in the file text. */
export interface LocatedSymbol extends SymbolInfo {
  /** The definition itself (what replace_symbol_body replaces). */
  start: number;
  end: number;
  /** With `export`, decorators or the declaration keyword around it (what inserts go around). */
  outerStart: number;
  outerEnd: number;
}

const EXTENSIONS: Record<string, GrammarName> = {
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'tsx',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  py: 'python',
  go: 'go',
  rs: 'rust',
  java: 'java',
  rb: 'ruby',
  php: 'php',
  cs: 'c-sharp',
  cpp: 'cpp',
  cc: 'cpp',
  cxx: 'cpp',
  hpp: 'cpp',
  hh: 'cpp',
  h: 'cpp',
};

export const SYMBOL_EXTENSIONS = Object.keys(EXTENSIONS);

// biome-ignore format: a packed table reads better
const DEFINITIONS: Record<string, string> = {
  // TypeScript / JavaScript
  class_declaration: 'class', abstract_class_declaration: 'class', class: 'class', interface_declaration: 'interface',
  type_alias_declaration: 'type', enum_declaration: 'enum', function_declaration: 'function',
  generator_function_declaration: 'function', method_definition: 'method', method_signature: 'method',
  abstract_method_signature: 'method', public_field_definition: 'property', property_signature: 'property',
  field_definition: 'property', internal_module: 'namespace', module: 'module',
  // Python
  class_definition: 'class', function_definition: 'function',
  // Go
  method_declaration: 'method', type_spec: 'type',
  // Rust
  function_item: 'function', function_signature_item: 'function', struct_item: 'struct', enum_item: 'enum',
  trait_item: 'trait', mod_item: 'module', const_item: 'constant', static_item: 'constant', type_item: 'type',
  macro_definition: 'macro', union_item: 'union',
  // Java / C#
  record_declaration: 'record', constructor_declaration: 'constructor', annotation_type_declaration: 'interface',
  struct_declaration: 'struct', property_declaration: 'property', namespace_declaration: 'namespace',
  // Ruby
  method: 'method', singleton_method: 'method',
  // PHP
  trait_declaration: 'trait',
  // C++
  class_specifier: 'class', struct_specifier: 'struct', namespace_definition: 'namespace', enum_specifier: 'enum',
};

/** Containers that only give their name to what they hold (Rust `impl Foo`). */
const TRANSPARENT_CONTAINERS = new Set(['impl_item']);

export function languageFor(path: string): GrammarName | undefined {
  const ext = path.split('.').pop()?.toLowerCase() ?? '';
  return EXTENSIONS[ext];
}

/** What one file's symbol parse takes on (mutable for tests only). */
export const PARSE_LIMITS = {
  /** Bytes of one file: larger ones are not read for symbols. */
  maxBytes: 2 * 1024 * 1024,
  /** Characters of one line: a longer one is minified or generated code. */
  maxLineLength: 10_000,
  /** Parse and walk of one file together. */
  budgetMs: 3_000,
};

/** A file not parsed for symbols, and why (what results list as `skipped`). */
export interface SkippedFile {
  path: string;
  reason: string;
}

const MB = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;

/** Why a file of this size is not parsed for symbols, if it is not. */
export function sizeSkip(bytes: number): string | undefined {
  return bytes > PARSE_LIMITS.maxBytes
    ? `${MB(bytes)}, over the ${MB(PARSE_LIMITS.maxBytes)} limit for symbol parsing`
    : undefined;
}

/** Why this text is not parsed for symbols, if it is not: too large, or a line too long. */
export function parseSkip(text: string): string | undefined {
  const size = sizeSkip(text.length);
  if (size) return size;
  for (let start = 0, line = 1; start < text.length; line++) {
    const end = text.indexOf('\n', start);
    const stop = end === -1 ? text.length : end;
    if (stop - start > PARSE_LIMITS.maxLineLength)
      return `line ${line} is ${stop - start} characters long (minified or generated code?), over the ${PARSE_LIMITS.maxLineLength}-character limit for symbol parsing`;
    start = stop + 1;
  }
  return undefined;
}

/** A file the symbol parser skipped (parseSkip or the time budget): a clear error if not caught. */
export class SymbolParseSkipped extends SvcError {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(
      'invalid_input',
      `${path} was not parsed for symbols: ${reason}; search it with search mode text instead`,
      { details: { path, reason: 'parse_skipped', why: reason } },
    );
  }
}

/** The reason a caught error is a skipped parse, else undefined. */
export function skippedBy(error: unknown): SkippedFile | undefined {
  return error instanceof SymbolParseSkipped ? { path: error.path, reason: error.reason } : undefined;
}

/** Let the event loop serve other calls between files. */
export const breathe = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Parse within PARSE_LIMITS and run `fn` on the tree; `tick` throws once the budget is spent. */
async function withTree(
  path: string,
  grammar: GrammarName,
  text: string,
  fn: (tree: Tree, tick: () => void) => void,
): Promise<boolean> {
  const skip = parseSkip(text);
  if (skip) throw new SymbolParseSkipped(path, skip);
  const parser = await parserFor(grammar);
  const deadline = Date.now() + PARSE_LIMITS.budgetMs;
  const over = () =>
    new SymbolParseSkipped(
      path,
      `parsing took over ${PARSE_LIMITS.budgetMs / 1000} s (the limit for one file)`,
    );
  let expired = false;
  const tree = parser.parse(text, null, {
    progressCallback: () => {
      expired ||= Date.now() >= deadline;
      return expired;
    },
  });
  if (expired) {
    tree?.delete();
    throw over();
  }
  if (!tree) return false;
  let nodes = 0;
  const tick = () => {
    if ((nodes++ & 1023) === 0 && Date.now() >= deadline) throw over();
  };
  try {
    fn(tree, tick);
    return true;
  } finally {
    tree.delete();
  }
}

/** Every symbol defined in a file, in document order; throws SymbolParseSkipped past PARSE_LIMITS. */
export async function fileSymbols(path: string, text: string): Promise<LocatedSymbol[]> {
  const grammar = languageFor(path);
  if (!grammar) return [];
  const found: LocatedSymbol[] = [];
  const parsed = await withTree(path, grammar, text, (tree, tick) =>
    walk(tree.rootNode, [], path, found, grammar, tick),
  );
  if (!parsed) return [];
  // symbol_key: unique per file; duplicates (overloads) get an ordinal.
  const counts = new Map<string, number>();
  for (const s of found) counts.set(s.symbol_key, (counts.get(s.symbol_key) ?? 0) + 1);
  const seen = new Map<string, number>();
  for (const s of found) {
    if ((counts.get(s.symbol_key) ?? 0) > 1) {
      const n = (seen.get(s.symbol_key) ?? 0) + 1;
      seen.set(s.symbol_key, n);
      s.symbol_key = `${s.symbol_key}::${n}`;
    }
  }
  return found;
}

function walk(
  node: Node,
  containers: string[],
  path: string,
  out: LocatedSymbol[],
  grammar: GrammarName,
  tick: () => void,
): void {
  for (const child of node.namedChildren) {
    if (!child) continue;
    tick();
    const symbol = definitionOf(child, containers, path, grammar);
    if (symbol) {
      out.push(symbol);
      walk(child, [...containers, symbol.name], path, out, grammar, tick);
      continue;
    }
    if (TRANSPARENT_CONTAINERS.has(child.type)) {
      const type = child.childForFieldName('type');
      const name = type ? baseTypeName(type.text) : undefined;
      walk(child, name ? [...containers, name] : containers, path, out, grammar, tick);
      continue;
    }
    // Module-level constants and functions bound to variables (`export const f = () => …`).
    if (
      (child.type === 'lexical_declaration' || child.type === 'variable_declaration') &&
      containers.length === 0
    ) {
      for (const declarator of child.namedChildren) {
        if (declarator?.type !== 'variable_declarator') continue;
        const nameNode = declarator.childForFieldName('name');
        if (nameNode?.type !== 'identifier') continue;
        const value = declarator.childForFieldName('value');
        const kind =
          value && /^(arrow_function|function_expression|function|generator_function)$/.test(value.type)
            ? 'function'
            : value && value.type === 'class'
              ? 'class'
              : 'variable';
        const outer = child.parent?.type === 'export_statement' ? child.parent : child;
        out.push(located(nameNode.text, kind, containers, path, child, outer));
      }
      continue;
    }
    walk(child, containers, path, out, grammar, tick);
  }
}

function definitionOf(
  node: Node,
  containers: string[],
  path: string,
  grammar: GrammarName,
): LocatedSymbol | undefined {
  let kind = DEFINITIONS[node.type];
  if (!kind) return undefined;
  // Ruby's `module`/`class` and JS's `class` expression share names with other grammars' nodes.
  if (node.type === 'module' && grammar !== 'ruby') return undefined;
  if (node.type === 'class' && grammar !== 'ruby' && !node.childForFieldName('name')) return undefined;
  const name = nameOf(node, grammar);
  if (!name) return undefined;
  let scope = containers;
  if (node.type === 'method_declaration' && grammar === 'go') {
    const receiver = node.childForFieldName('receiver');
    const type = receiver?.descendantsOfType('type_identifier')[0];
    if (type) scope = [...containers, type.text];
  }
  if (kind === 'function' && containers.length > 0 && (grammar === 'python' || grammar === 'rust'))
    kind = 'method';
  let outer: Node = node;
  while (
    outer.parent &&
    /^(export_statement|decorated_definition|template_declaration)$/.test(outer.parent.type)
  ) {
    outer = outer.parent;
  }
  return located(name, kind, scope, path, node, outer);
}

function nameOf(node: Node, grammar: GrammarName): string | undefined {
  const field = node.childForFieldName('name');
  if (field) return grammar === 'cpp' ? baseTypeName(field.text) : field.text;
  // C/C++ functions: the name is inside the declarator chain.
  let declarator = node.childForFieldName('declarator');
  while (declarator) {
    if (
      /identifier$/.test(declarator.type) ||
      declarator.type === 'operator_name' ||
      declarator.type === 'destructor_name'
    ) {
      return declarator.text.split('::').pop();
    }
    declarator = declarator.childForFieldName('declarator') ?? declarator.namedChildren[0] ?? null;
  }
  return undefined;
}

function located(
  name: string,
  kind: string,
  containers: string[],
  path: string,
  node: Node,
  outer: Node,
): LocatedSymbol {
  const name_path = [...containers, name].join('.');
  return {
    name,
    kind,
    name_path,
    symbol_key: `${path}::${name_path}::${kind}`,
    path,
    start_line: outer.startPosition.row + 1,
    end_line: node.endPosition.row + 1,
    depth: containers.length,
    start: node.startIndex,
    end: node.endIndex,
    outerStart: outer.startIndex,
    outerEnd: outer.endIndex,
  };
}

function baseTypeName(text: string): string {
  return (
    text
      .replace(/<[\s\S]*$/, '')
      .split('::')
      .pop()
      ?.trim() ?? text
  );
}

/** Does a symbol's name_path end with the given path (`save`, `UserService.save`)? */
export function matchesNamePath(symbol: SymbolInfo, namePath: string): boolean {
  const wanted = namePath.replace(/^\//, '').split(/[./]/).filter(Boolean);
  const have = symbol.name_path.split('.');
  if (namePath.startsWith('/')) return wanted.join('.') === have.join('.');
  if (wanted.length > have.length) return false;
  return wanted.every((w, i) => have[have.length - wanted.length + i] === w);
}

/**
 * Identifier nodes with this exact text (strings and comments are other node types); throws
 * SymbolParseSkipped past PARSE_LIMITS.
 */
export async function identifierRanges(
  path: string,
  text: string,
  name: string,
): Promise<[number, number][]> {
  const grammar = languageFor(path);
  if (!grammar) return [];
  const ranges: [number, number][] = [];
  await withTree(path, grammar, text, (tree, tick) => {
    const visit = (node: Node) => {
      tick();
      if (node.namedChildCount === 0) {
        if (node.text === name && /(identifier|^constant|^name)$/.test(node.type)) {
          ranges.push([node.startIndex, node.endIndex]);
        }
        return;
      }
      for (const child of node.namedChildren) if (child) visit(child);
    };
    visit(tree.rootNode);
  });
  return ranges;
}
