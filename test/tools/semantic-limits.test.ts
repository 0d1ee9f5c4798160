/**
 * The symbol parser's bounds (src/workspace/symbols.ts PARSE_LIMITS). A 50 MB one-line bundle
 * held svc's event loop for over a minute in one `search` symbol-overview, with gigabytes of
 * memory, and answered `files: []` without a word (found by probing). Pins:
 * - a file over the size limit, and one with a line over the length limit (minified), are not
 *   parsed: symbol-overview, symbol-lookup and the tree-sitter symbol-references list them under
 *   `skipped` with the reason, and the other files' symbols are still there; symbol-definition in
 *   such a file is refused with the reason;
 * - a tree-sitter rename that would have to edit such a file is refused, and nothing changes;
 * - analyze_ripple_impact lists such a file under `skipped` instead of parsing it;
 * - a parse over the time budget stops with a clear reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { fileSymbols, identifierRanges, PARSE_LIMITS } from '../../src/workspace/symbols';
import { toolHarness } from './harness';

const defaults = { ...PARSE_LIMITS };
afterEach(() => Object.assign(PARSE_LIMITS, defaults));

/** Over the size limit: many small statements (what made the parse slow), a use of `helper`. */
const BIG = `export function big() {}\n${'helper(1);\n'.repeat(Math.ceil((PARSE_LIMITS.maxBytes + 1024) / 10))}`;
/** Under the size limit, but one line of minified code. */
const MINIFIED = `export function min(){};${'helper(1);'.repeat(PARSE_LIMITS.maxLineLength / 5)}\n`;

const files = {
  'src/ok.ts': 'export function helper(n: number) {\n  return n;\n}\n',
  'src/big.js': BIG,
  'src/min.js': MINIFIED,
};
/** No language server: the tree-sitter paths answer. */
const config = { options: { lsp: { auto: false } } };

describe('symbol parsing bounds', () => {
  it('symbol-overview and symbol-lookup skip a too-large or minified file and say why', async () => {
    const h = await toolHarness({ files, config });
    const overview = await h.call('search', { mode: 'symbol-overview', path: 'src', depth: 1 });
    expect(overview.files.map((f: { path: string }) => f.path)).toEqual(['src/ok.ts']);
    expect(overview.skipped).toEqual([
      { path: 'src/big.js', reason: expect.stringMatching(/MB, over the 2\.0 MB limit for symbol parsing/) },
      { path: 'src/min.js', reason: expect.stringMatching(/^line 1 is \d+ characters long \(minified/) },
    ]);
    expect(h.modelText('search', { mode: 'symbol-overview', ...overview })).toMatch(
      /Not parsed for symbols \(search mode text still finds them\):\n {2}src\/big\.js: .*MB.*\n {2}src\/min\.js: line 1/,
    );

    const one = await h.call('search', { mode: 'symbol-overview', path: 'src/big.js' });
    expect(one).toMatchObject({ files: [], truncated: false, skipped: [{ path: 'src/big.js' }] });
    expect(h.modelText('search', { mode: 'symbol-overview', ...one })).toMatch(
      /^No symbols found under src\/big\.js\.\nNot parsed for symbols/,
    );

    const lookup = await h.call('search', { mode: 'symbol-lookup', name_path: 'helper' });
    expect(lookup.symbols.map((s: { path: string }) => s.path)).toEqual(['src/ok.ts']);
    expect(lookup.skipped.map((s: { path: string }) => s.path).sort()).toEqual(['src/big.js', 'src/min.js']);
    const none = await h.call('search', { mode: 'symbol-lookup', name_path: 'big' });
    expect(none).toMatchObject({ symbols: [], skipped: [{ path: 'src/big.js' }] });
    await expect(h.call('search', { mode: 'symbol-references', name_path: 'big' })).rejects.toThrow(
      /no symbol matches name_path big.*\(not parsed: src\/big\.js, .*MB/,
    );
    await expect(
      h.call('search', { mode: 'symbol-definition', path: 'src/big.js', line: 2, column: 1 }),
    ).rejects.toThrow(/path: src\/big\.js is not parsed for symbols \(.*MB, over the 2\.0 MB limit/);

    const refs = await h.call('search', {
      mode: 'symbol-references',
      name_path: 'helper',
      path: 'src/ok.ts',
    });
    expect(refs.engine).toBe('tree-sitter');
    expect(refs.references.map((r: { path: string }) => r.path)).toEqual(['src/ok.ts']);
    expect(refs.skipped.map((s: { path: string }) => s.path).sort()).toEqual(['src/big.js', 'src/min.js']);
  });

  it('a tree-sitter rename that would edit a file it cannot parse is refused; nothing changes', async () => {
    const h = await toolHarness({ files, config });
    await expect(
      h.call('edit', { mode: 'rename_symbol', name_path: 'helper', path: 'src/ok.ts', new_name: 'assist' }),
    ).rejects.toThrow(
      /rename_symbol: src\/(big|min)\.js mentions helper but is not parsed .*nothing was changed/,
    );
    expect(h.read('src/ok.ts')).toBe(files['src/ok.ts']);
    expect(h.asks).toHaveLength(0);
    // Left out by scope, the rename goes ahead.
    const renamed = await h.call('edit', {
      mode: 'rename_symbol',
      name_path: 'helper',
      path: 'src/ok.ts',
      new_name: 'assist',
      scope: 'src/ok.ts',
    });
    expect(renamed.files.map((f: { path: string }) => f.path)).toEqual(['src/ok.ts']);
  });

  it('analyze_ripple_impact lists a file it cannot parse under skipped', async () => {
    const use = "import { helper } from './ok';\nhelper(2);\n";
    const h = await toolHarness({ files: { ...files, 'src/use.ts': use }, config });
    const result = (await invokeTool(
      h.app,
      'analyze_ripple_impact',
      { symbols: ['helper'] },
      { surface: 'cli' },
    )) as { skipped?: { path: string; reason: string }[]; symbols: { files: number }[] };
    expect(result.skipped).toEqual([{ path: 'src/min.js', reason: expect.stringContaining('minified') }]);
    expect(result.symbols[0].files).toBe(1);
  });

  it('a parse over the time budget stops with the reason', async () => {
    PARSE_LIMITS.budgetMs = -1;
    await expect(fileSymbols('a.ts', 'export const a = 1;\n')).rejects.toThrow(
      /a\.ts was not parsed for symbols: parsing took over/,
    );
    await expect(identifierRanges('a.ts', 'const a = 1;\n', 'a')).rejects.toThrow(/parsing took over/);
    Object.assign(PARSE_LIMITS, defaults);
    expect(await identifierRanges('a.ts', 'const a = 1;\n', 'a')).toEqual([[6, 7]]);
  });
});
