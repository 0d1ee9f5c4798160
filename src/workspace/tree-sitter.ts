/**
 * tree-sitter (web-tree-sitter 0.25 + the grammars shipped in @vscode/tree-sitter-wasm), loaded on
 * first use so commands that never parse code pay nothing. One parser per language, reused.
 * Callers must `tree.delete()` what they parse (wasm memory is not garbage-collected).
 * @module
 */
import { createRequire } from 'node:module';
import type { Language, Parser } from 'web-tree-sitter';

export type GrammarName =
  | 'bash'
  | 'typescript'
  | 'tsx'
  | 'javascript'
  | 'python'
  | 'go'
  | 'rust'
  | 'java'
  | 'ruby'
  | 'php'
  | 'c-sharp'
  | 'cpp'
  | 'css';

let runtime: Promise<typeof import('web-tree-sitter')> | undefined;
const parsers = new Map<GrammarName, Promise<Parser>>();

async function loadRuntime(): Promise<typeof import('web-tree-sitter')> {
  runtime ??= (async () => {
    const module = await import('web-tree-sitter');
    await module.Parser.init();
    return module;
  })();
  return runtime;
}

/** A parser for the grammar, created once per process. */
export function parserFor(name: GrammarName): Promise<Parser> {
  let parser = parsers.get(name);
  if (!parser) {
    parser = (async () => {
      const { Parser: P, Language: L } = await loadRuntime();
      const requireHere = createRequire(import.meta.url);
      const language: Language = await L.load(
        requireHere.resolve(`@vscode/tree-sitter-wasm/wasm/tree-sitter-${name}.wasm`),
      );
      const p = new P();
      p.setLanguage(language);
      return p;
    })();
    parser.catch(() => parsers.delete(name));
    parsers.set(name, parser);
  }
  return parser;
}
