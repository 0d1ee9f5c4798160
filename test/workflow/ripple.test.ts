/**
 * analyze_ripple_impact. Pins: importers are found by resolving import specifiers (relative
 * TypeScript paths, `.js` specifiers of `.ts` files, index files, Python modules), transitively up
 * to `depth`; a file that only mentions the name in a string is not an importer; symbol references
 * count identifiers (tree-sitter), not comments; tests are found by import, by name and by
 * reference; risk notes follow from the facts; without files or symbols it analyzes git changes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';

const FILES = {
  'package.json': JSON.stringify({ name: 'demo', main: 'src/index.ts', devDependencies: { vitest: '4' } }),
  'src/parse.ts':
    'export function parse(text: string) {\n  return text.split(",");\n}\nexport const SEP = ",";\n',
  'src/reader.ts':
    "import { parse } from './parse';\nexport function read(t: string) {\n  return parse(t);\n}\n",
  'src/index.ts': "export { read } from './reader.js';\n",
  'src/cli.ts':
    "import { read } from './index';\n// parse is mentioned here only in a comment\nexport const run = () => read('a');\n",
  'src/notes.ts': "export const doc = 'see ./parse for parse';\n",
  'test/parse.test.ts': "import { parse } from '../src/parse';\nparse('a,b');\n",
  'test/cli.test.ts': "import { run } from '../src/cli';\nrun();\n",
  'py/pkg/util.py': 'def helper():\n    return 1\n',
  'py/app.py': 'from pkg.util import helper\nprint(helper())\n',
  'py/test_util.py': 'from pkg import util\n',
};

describe('analyze_ripple_impact', () => {
  it('follows imports transitively, finds covering tests and notes the risks', async () => {
    const app = await makeTestApp({ files: FILES });
    const result = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['src/parse.ts'], symbols: ['parse'] },
      { surface: 'cli' },
    )) as any;
    expect(result.source).toBe('input');
    expect(
      result.dependents.map((d: { path: string; depth: number; specifier: string }) => [
        d.path,
        d.depth,
        d.specifier,
      ]),
    ).toEqual([
      ['src/reader.ts', 1, './parse'],
      ['test/parse.test.ts', 1, '../src/parse'],
      ['src/index.ts', 2, './reader.js'],
    ]);
    expect(result.changed[0]).toMatchObject({
      path: 'src/parse.ts',
      exists: true,
      language: 'typescript',
      importers: 2,
      exported_symbols: [
        { name: 'parse', kind: 'function', line: 1 },
        { name: 'SEP', kind: 'variable', line: 4 },
      ],
      used_by: [
        { path: 'src/reader.ts', symbols: ['parse'] },
        { path: 'test/parse.test.ts', symbols: ['parse'] },
      ],
    });
    const parse = result.symbols[0];
    expect(parse.definitions).toEqual([{ path: 'src/parse.ts', line: 1, kind: 'function' }]);
    // Comments and strings do not count: cli.ts and notes.ts only mention the word.
    expect(parse.references.map((r: { path: string; count: number }) => [r.path, r.count])).toEqual([
      ['src/reader.ts', 2],
      ['test/parse.test.ts', 2],
    ]);
    expect(result.tests).toEqual([
      {
        path: 'test/parse.test.ts',
        reasons: ['imports src/parse.ts', 'named after src/parse.ts', 'references parse'],
      },
    ]);
    expect(result.test_commands).toEqual(['npx vitest run test/parse.test.ts']);
    expect(result.risk.notes).toEqual([
      { severity: 'low', message: '1 file(s) depend on the change indirectly (depth 2+)' },
    ]);
    expect(result.risk.level).toBe('low');

    const deeper = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['src/parse.ts'], depth: 3 },
      { surface: 'cli' },
    )) as any;
    expect(deeper.dependents.map((d: { path: string }) => d.path)).toEqual([
      'src/reader.ts',
      'test/parse.test.ts',
      'src/index.ts',
      'src/cli.ts',
    ]);
  });

  it('resolves Python modules and notes entry-point and untested files', async () => {
    const app = await makeTestApp({ files: FILES });
    const py = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['py/pkg/util.py'] },
      { surface: 'cli' },
    )) as any;
    expect(py.dependents.map((d: { path: string; specifier: string }) => [d.path, d.specifier])).toEqual([
      ['py/app.py', 'pkg.util'],
      ['py/test_util.py', 'pkg.util'],
    ]);
    expect(py.tests.map((t: { path: string }) => t.path)).toEqual(['py/test_util.py']);
    expect(py.test_commands).toEqual(['pytest py/test_util.py']);

    const entry = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['src/index.ts'] },
      { surface: 'cli' },
    )) as any;
    // test/cli.test.ts covers it through src/cli.ts.
    expect(entry.tests).toEqual([
      { path: 'test/cli.test.ts', reasons: ['imports src/cli.ts (reaches src/index.ts)'] },
    ]);
    expect(entry.risk.notes).toEqual([
      {
        severity: 'medium',
        message: 'src/index.ts is a package entry point: changes reach outside consumers',
      },
      { severity: 'low', message: '1 file(s) depend on the change indirectly (depth 2+)' },
    ]);
    const untested = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['src/notes.ts'] },
      { surface: 'cli' },
    )) as any;
    expect(untested.risk.notes).toEqual([
      { severity: 'medium', message: 'no test covers src/notes.ts (none imports it or is named after it)' },
    ]);
    expect(entry.risk.level).toBe('medium');
  });

  it('analyzes the working tree changes from git when given nothing', async () => {
    const app = await makeTestApp({ files: FILES, git: true });
    writeFileSync(
      join(app.workspace, 'src/reader.ts'),
      "import { parse } from './parse';\nexport const read = parse;\n",
    );
    writeFileSync(join(app.workspace, 'src/new.ts'), "import { read } from './reader';\nread('x');\n");
    const result = (await invokeTool(app, 'analyze_ripple_impact', { depth: 3 }, { surface: 'cli' })) as any;
    expect(result.source).toBe('git');
    expect(result.changed.map((c: { path: string }) => c.path)).toEqual(['src/new.ts', 'src/reader.ts']);
    expect(result.dependents.map((d: { path: string }) => d.path)).toEqual([
      'src/index.ts',
      'src/cli.ts',
      'test/cli.test.ts',
    ]);
    expect(result.tests).toEqual([
      { path: 'test/cli.test.ts', reasons: ['imports src/cli.ts (reaches src/reader.ts)'] },
    ]);
  });
});
