/**
 * `search` (family semantic): text search (ripgrep, as grep), the symbol modes symbol-overview
 * and symbol-lookup (tree-sitter), with selectors name_path and symbol_key, and
 * symbol-references / symbol-definition (the file's language server, else tree-sitter by name).
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { GrepResult } from '../workspace/search';
import type {
  CodeLocation,
  DefinitionResult,
  LookupResult,
  OverviewResult,
  ReferencesResult,
} from '../workspace/semantic';
import type { SkippedFile, SymbolInfo } from '../workspace/symbols';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';
import { renderGrep } from './files';
import { searchPrompt } from './search.prompt';

export const searchInput = () =>
  z.strictObject({
    mode: z
      .enum(['text', 'symbol-overview', 'symbol-lookup', 'symbol-references', 'symbol-definition'])
      .default('text')
      .describe(
        'text: content search (like grep); symbol-overview: the symbols of a file or directory; symbol-lookup: find symbols by name_path or symbol_key; symbol-references: every use of one symbol (name_path or symbol_key); symbol-definition: where the name at path, line, column is defined. Default text.',
      ),
    pattern: z
      .string()
      .min(1)
      .optional()
      .describe('text mode: the regular expression (or plain text with literal) to find.'),
    literal: z.boolean().default(false).describe('text mode: treat pattern as plain text. Default false.'),
    glob: z
      .string()
      .min(1)
      .optional()
      .describe('text mode: only files whose path matches this glob, e.g. "*.ts".'),
    path: z
      .string()
      .min(1)
      .default('.')
      .describe('File or directory to search, relative to the workspace root. Default: the root.'),
    name_path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'symbol-lookup, symbol-references: a symbol name or dotted path of containers and name ("save", "UserService.save"); a leading "/" anchors it at top level.',
      ),
    symbol_key: z
      .string()
      .min(1)
      .optional()
      .describe(
        'symbol-lookup, symbol-references: the exact key of one symbol, as a previous search returned it (more precise than name_path).',
      ),
    line: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('symbol-definition: the 1-based line, in the file given by path, where the name is used.'),
    column: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'symbol-definition: the 1-based column of (any character of) the name on that line. Omit it for the first name on the line.',
      ),
    depth: z
      .number()
      .int()
      .min(1)
      .max(10)
      .optional()
      .describe(
        'symbol-overview: nesting levels to include (1 = top level only). Default: 5 for a file, 1 for a directory.',
      ),
    include_body: z
      .boolean()
      .default(false)
      .describe('symbol-lookup: include the source of each symbol found. Default false.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(2000)
      .default(100)
      .describe('Most matches or symbols to return. Default 100.'),
  });

type SearchResult = GrepResult | OverviewResult | LookupResult | ReferencesResult | DefinitionResult;

export const search = defineTool({
  name: 'search',
  examples: [{ pattern: 'parity' }],
  family: 'semantic',
  tag: 'primitive',
  description: searchPrompt,
  input: searchInput,
  mutates: false,
  surfaces: { mcp: 'svc_search' },
  async run(ctx, input): Promise<SearchResult & { mode: string }> {
    const op = opContext(ctx, 'search');
    switch (input.mode) {
      case 'text': {
        if (!input.pattern)
          throw new SvcError('invalid_input', 'pattern: text mode needs a pattern to search for');
        const result = await ctx.app.ws.search.grep(
          {
            pattern: input.pattern,
            literal: input.literal,
            glob: input.glob,
            path: input.path,
            limit: input.limit,
          },
          op,
        );
        return { mode: input.mode, ...result };
      }
      case 'symbol-overview':
        return {
          mode: input.mode,
          ...(await ctx.app.ws.semantic.overview({ path: input.path, depth: input.depth }, op)),
        };
      case 'symbol-lookup': {
        if (!input.name_path && !input.symbol_key) {
          throw new SvcError('invalid_input', 'name_path: symbol-lookup needs name_path or symbol_key');
        }
        const result = await ctx.app.ws.semantic.lookup(
          {
            name_path: input.name_path,
            symbol_key: input.symbol_key,
            path: input.symbol_key ? undefined : input.path,
            include_body: input.include_body,
            limit: input.limit,
          },
          op,
        );
        return { mode: input.mode, ...result };
      }
      case 'symbol-references': {
        if (!input.name_path && !input.symbol_key) {
          throw new SvcError('invalid_input', 'name_path: symbol-references needs name_path or symbol_key');
        }
        const result = await ctx.app.ws.semantic.references(
          {
            name_path: input.name_path,
            symbol_key: input.symbol_key,
            path: input.symbol_key ? undefined : input.path,
            limit: input.limit,
          },
          op,
        );
        return { mode: input.mode, ...result };
      }
      case 'symbol-definition': {
        if (input.path === '.' || input.line === undefined) {
          throw new SvcError(
            'invalid_input',
            'line: symbol-definition needs path (the file) and line (and column) of the name whose definition you want',
          );
        }
        const result = await ctx.app.ws.semantic.definition(
          { path: input.path, line: input.line, column: input.column },
          op,
        );
        return { mode: input.mode, ...result };
      }
      default: {
        const never: never = input.mode;
        throw new SvcError('invalid_input', `mode: unknown mode ${never}`);
      }
    }
  },
  toModelOutput(result) {
    if (result.mode === 'text') return renderGrep(result as GrepResult);
    const line = (s: SymbolInfo) =>
      `${'  '.repeat(s.depth)}${s.kind} ${s.name_path} (lines ${s.start_line}–${s.end_line}) key=${s.symbol_key}`;
    const skipped = skippedText((result as { skipped?: SkippedFile[] }).skipped);
    if (result.mode === 'symbol-overview') {
      const overview = result as OverviewResult;
      if (overview.files.length === 0) return `No symbols found under ${overview.path}.${skipped}`;
      const text = overview.files
        .map((f) => `${f.path}:\n${f.symbols.map((s) => `  ${line(s)}`).join('\n')}`)
        .join('\n\n');
      return `${text}${overview.truncated ? '\n(truncated: give a narrower path)' : ''}${skipped}`;
    }
    if (result.mode === 'symbol-references' || result.mode === 'symbol-definition')
      return `${renderNavigation(result as (ReferencesResult | DefinitionResult) & { mode: string })}${skipped}`;
    const lookup = result as LookupResult;
    if (lookup.symbols.length === 0) return `No symbol matches.${skipped}`;
    return `${lookup.symbols
      .map((s) => `${s.path}: ${line({ ...s, depth: 0 })}${s.body === undefined ? '' : `\n${s.body}`}`)
      .join('\n\n')}${skipped}`;
  },
});

/** Files the symbol parser left out, and why (too large, minified, over the time budget). */
function skippedText(skipped: SkippedFile[] | undefined): string {
  if (!skipped?.length) return '';
  return `\nNot parsed for symbols (search mode text still finds them):\n${skipped
    .map((s) => `  ${s.path}: ${s.reason}`)
    .join('\n')}`;
}

function renderNavigation(result: (ReferencesResult | DefinitionResult) & { mode: string }): string {
  const at = (l: CodeLocation) =>
    `${l.path}:${l.line}:${l.column}: ${l.text_withheld ? `(text not read: ${l.text_withheld})` : l.text}`;
  const engine = result.engine === 'lsp' ? `language server ${result.server}` : 'tree-sitter (by name)';
  const note = result.note ? `\nNote: ${result.note}` : '';
  if ('references' in result) {
    const head = `${result.references.length} reference(s) to ${result.symbol.name_path} (${engine})`;
    const more = result.truncated ? '\n(truncated: raise limit or narrow path)' : '';
    return `${head}:\n${result.references.map(at).join('\n')}${more}${note}`;
  }
  const asked = `${result.name} at ${result.path}:${result.line}:${result.column}`;
  if (result.definitions.length === 0) return `No definition found for ${asked} (${engine}).${note}`;
  return `Definition of ${asked} (${engine}):\n${result.definitions.map(at).join('\n')}${note}`;
}
