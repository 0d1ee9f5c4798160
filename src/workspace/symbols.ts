/**
 * Symbols from tree-sitter parse trees: functions, classes, methods, interfaces, types… with a
 * `name_path` (`UserService.save`: containers joined by dots) and a `symbol_key`
 * (`<file>::<name_path>::<kind>`, plus `::<n>` when overloads share it) that pins one definition.
 * Syntax only (no type information): precise about where definitions are, not about which
 * same-named identifier refers to which.
 * @module
 */
import type { Node } from 'web-tree-sitter';
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

/** Every symbol defined in a file, in document order. */
export async function fileSymbols(path: string, text: string): Promise<LocatedSymbol[]> {
  const grammar = languageFor(path);
  if (!grammar) return [];
  const parser = await parserFor(grammar);
  const tree = parser.parse(text);
  if (!tree) return [];
  const found: LocatedSymbol[] = [];
  try {
    walk(tree.rootNode, [], path, found, grammar);
  } finally {
    tree.delete();
  }
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
): void {
  for (const child of node.namedChildren) {
    if (!child) continue;
    const symbol = definitionOf(child, containers, path, grammar);
    if (symbol) {
      out.push(symbol);
      walk(child, [...containers, symbol.name], path, out, grammar);
      continue;
    }
    if (TRANSPARENT_CONTAINERS.has(child.type)) {
      const type = child.childForFieldName('type');
      const name = type ? baseTypeName(type.text) : undefined;
      walk(child, name ? [...containers, name] : containers, path, out, grammar);
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
    walk(child, containers, path, out, grammar);
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

/** Identifier nodes with this exact text (strings and comments are other node types). */
export async function identifierRanges(
  path: string,
  text: string,
  name: string,
): Promise<[number, number][]> {
  const grammar = languageFor(path);
  if (!grammar) return [];
  const parser = await parserFor(grammar);
  const tree = parser.parse(text);
  if (!tree) return [];
  const ranges: [number, number][] = [];
  try {
    const visit = (node: Node) => {
      if (node.namedChildCount === 0) {
        if (node.text === name && /(identifier|^constant|^name)$/.test(node.type)) {
          ranges.push([node.startIndex, node.endIndex]);
        }
        return;
      }
      for (const child of node.namedChildren) if (child) visit(child);
    };
    visit(tree.rootNode);
  } finally {
    tree.delete();
  }
  return ranges;
}
