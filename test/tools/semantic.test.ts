/**
 * Semantic search and structural edits over tree-sitter symbols. Pins:
 * - TOOLS-59: search symbol-overview and symbol-lookup return symbols;
 * - TOOLS-61: name_path and symbol_key resolve the same symbol;
 * - TOOLS-60: rename_symbol, replace_symbol_body, insert_before_symbol, insert_after_symbol edit the target;
 * - TOOLS-62: a rename touches every file that uses the name (not strings or comments);
 * - TOOLS-63: renames ask with the diff of every file and land in the file history;
 * - edit keeps exact replacement as its default mode.
 */
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const files = {
  'src/user-service.ts': [
    'import { save as persist } from "./store";',
    '',
    '/** Users. */',
    'export class UserService {',
    '  private count = 0;',
    '',
    '  save(name: string): string {',
    '    this.count++;',
    '    return persist(name);',
    '  }',
    '',
    '  load(id: number) {',
    '    return id;',
    '  }',
    '}',
    '',
    'export function formatUser(name: string): string {',
    '  // formatUser is documented elsewhere',
    '  return `user ${name}`;',
    '}',
    '',
    'export const DEFAULT_NAME = "formatUser";',
    '',
  ].join('\n'),
  'src/app.ts': [
    'import { formatUser, UserService } from "./user-service";',
    '',
    'const service = new UserService();',
    'console.log(formatUser("ada"), service.save("ada"));',
    '',
  ].join('\n'),
  'src/store.ts': 'export function save(name: string) {\n  return name;\n}\n',
  'tools/build.py': [
    'import os',
    '',
    '@decorator',
    'class Builder:',
    '    def run(self, target):',
    '        return target',
    '',
    'def main():',
    '    Builder().run("x")',
    '',
  ].join('\n'),
  'cmd/main.go': 'package main\n\ntype Server struct{}\n\nfunc (s *Server) Start() {}\n\nfunc main() {}\n',
  'lib/core.rs': 'pub struct Engine;\n\nimpl Engine {\n    pub fn run(&self) {}\n}\n\nfn helper() {}\n',
};

const brief = (s: { kind: string; name_path: string; start_line: number; end_line: number }) =>
  `${s.kind} ${s.name_path} ${s.start_line}-${s.end_line}`;

describe('search', () => {
  it('TOOLS-59: symbol-overview lists the symbols of a file, and of a directory', async () => {
    const h = await toolHarness({ files });
    const file = await h.call('search', { mode: 'symbol-overview', path: 'src/user-service.ts' });
    expect(file.files[0].symbols.map(brief)).toEqual([
      'class UserService 4-15',
      'property UserService.count 5-5',
      'method UserService.save 7-10',
      'method UserService.load 12-14',
      'function formatUser 17-20',
      'variable DEFAULT_NAME 22-22',
    ]);
    expect(file.files[0].symbols[2].symbol_key).toBe('src/user-service.ts::UserService.save::method');
    const dir = await h.call('search', { mode: 'symbol-overview', path: '.' });
    expect(
      Object.fromEntries(
        dir.files.map((f: any) => [f.path, f.symbols.map((s: any) => `${s.kind} ${s.name_path}`)]),
      ),
    ).toEqual({
      'cmd/main.go': ['type Server', 'function main'],
      'lib/core.rs': ['struct Engine', 'function helper'],
      'src/app.ts': ['variable service'],
      'src/store.ts': ['function save'],
      'src/user-service.ts': ['class UserService', 'function formatUser', 'variable DEFAULT_NAME'],
      'tools/build.py': ['class Builder', 'function main'],
    });
    const deep = await h.call('search', { mode: 'symbol-overview', path: 'lib/core.rs' });
    expect(deep.files[0].symbols.map((s: any) => s.name_path)).toEqual(['Engine', 'Engine.run', 'helper']);
    expect(h.modelText('search', file)).toContain(
      '  method UserService.save (lines 7–10) key=src/user-service.ts::UserService.save::method',
    );
  });

  it('TOOLS-59/TOOLS-61: symbol-lookup finds symbols by name_path and by symbol_key, the same one', async () => {
    const h = await toolHarness({ files });
    const byPath = await h.call('search', {
      mode: 'symbol-lookup',
      name_path: 'UserService.save',
      include_body: true,
    });
    expect(byPath.symbols).toHaveLength(1);
    expect(byPath.symbols[0]).toMatchObject({ path: 'src/user-service.ts', kind: 'method', start_line: 7 });
    expect(byPath.symbols[0].body).toBe(
      'save(name: string): string {\n    this.count++;\n    return persist(name);\n  }',
    );
    const byKey = await h.call('search', { mode: 'symbol-lookup', symbol_key: byPath.symbols[0].symbol_key });
    expect(byKey.symbols).toEqual([{ ...byPath.symbols[0], body: undefined }].map(({ body: _b, ...s }) => s));
    const both = await h.call('search', { mode: 'symbol-lookup', name_path: 'save' });
    expect(both.symbols.map((s: any) => s.symbol_key).sort()).toEqual([
      'src/store.ts::save::function',
      'src/user-service.ts::UserService.save::method',
    ]);
    const anchored = await h.call('search', { mode: 'symbol-lookup', name_path: '/save' });
    expect(anchored.symbols.map((s: any) => s.path)).toEqual(['src/store.ts']);
    const py = await h.call('search', { mode: 'symbol-lookup', name_path: 'Builder.run' });
    expect(py.symbols[0]).toMatchObject({ path: 'tools/build.py', kind: 'method', start_line: 5 });
  });

  it('keeps text mode as a ripgrep search', async () => {
    const h = await toolHarness({ files });
    const result = await h.call('search', { pattern: 'persist\\(', glob: '*.ts' });
    expect(result).toMatchObject({ mode: 'text', total: 1 });
    await expect(h.call('search', {})).rejects.toThrow(/pattern: text mode needs a pattern/);
  });
});

describe('edit structural modes', () => {
  it('TOOLS-60: replace_symbol_body replaces the whole definition', async () => {
    const h = await toolHarness({ files });
    await h.call('edit', {
      mode: 'replace_symbol_body',
      path: 'src/user-service.ts',
      name_path: 'UserService.load',
      new_string: 'load(id: number): number {\n  return id * 2;\n}',
    });
    expect(h.read('src/user-service.ts')).toContain(
      '  load(id: number): number {\n    return id * 2;\n  }\n}',
    );
    await h.call('edit', {
      mode: 'replace_symbol_body',
      symbol_key: 'src/user-service.ts::formatUser::function',
      new_string: 'export function formatUser(name: string): string {\n  return name.toUpperCase();\n}',
    });
    expect(h.read('src/user-service.ts')).toContain(
      '\nexport function formatUser(name: string): string {\n  return name.toUpperCase();\n}\n',
    );
  });

  it('TOOLS-60: insert_before_symbol and insert_after_symbol add code around the definition', async () => {
    const h = await toolHarness({ files });
    await h.call('edit', {
      mode: 'insert_before_symbol',
      path: 'src/user-service.ts',
      name_path: 'UserService.load',
      new_string: '/** Loads. */',
    });
    await h.call('edit', {
      mode: 'insert_after_symbol',
      path: 'src/user-service.ts',
      name_path: 'UserService.load',
      new_string: 'reset() {\n  this.count = 0;\n}',
    });
    await h.call('edit', {
      mode: 'insert_after_symbol',
      path: 'tools/build.py',
      name_path: 'main',
      new_string: 'def extra():\n    pass',
    });
    expect(h.read('src/user-service.ts')).toContain(
      '  /** Loads. */\n  load(id: number) {\n    return id;\n  }\n  reset() {\n    this.count = 0;\n  }\n}',
    );
    expect(h.read('tools/build.py')).toBe(
      'import os\n\n@decorator\nclass Builder:\n    def run(self, target):\n        return target\n\ndef main():\n    Builder().run("x")\n\ndef extra():\n    pass\n',
    );
  });

  it('TOOLS-60/TOOLS-62/TOOLS-63: rename_symbol renames across files, asks with the diff and records history', async () => {
    const h = await toolHarness({ files });
    const result = await h.call('edit', {
      mode: 'rename_symbol',
      name_path: 'formatUser',
      new_name: 'renderUser',
    });
    expect(result).toMatchObject({ mode: 'rename_symbol', replacements: 3 });
    expect(result.files.map((f: any) => f.path)).toEqual(['src/user-service.ts', 'src/app.ts']);
    expect(h.read('src/app.ts')).toBe(
      'import { renderUser, UserService } from "./user-service";\n\nconst service = new UserService();\nconsole.log(renderUser("ada"), service.save("ada"));\n',
    );
    const service = h.read('src/user-service.ts');
    expect(service).toContain('export function renderUser(name: string)');
    // Comments and strings are not identifiers.
    expect(service).toContain('// formatUser is documented elsewhere');
    expect(service).toContain('export const DEFAULT_NAME = "formatUser";');

    expect(h.asks).toHaveLength(1);
    expect(h.asks[0]).toMatchObject({
      tool: 'edit',
      title: 'rename formatUser → renderUser (2 files)',
      details: {
        mode: 'rename_symbol',
        symbol_key: 'src/user-service.ts::formatUser::function',
        paths: ['src/user-service.ts', 'src/app.ts'],
      },
    });
    expect(h.asks[0].details?.diff).toContain('+++ b/src/app.ts');
    expect(h.asks[0].details?.diff).toContain('+++ b/src/user-service.ts');
    const history = await h.app.ws.history.list({ sessionId: 'ses_test' });
    expect(history.map((c) => `${c.tool} ${c.path} ${c.change}`)).toEqual([
      'edit src/user-service.ts modify',
      'edit src/app.ts modify',
    ]);
    expect(await h.app.ws.history.diff(history[1].id)).toContain('-import { formatUser, UserService }');
    expect(h.busEvents.filter((e) => e.type === 'file.changed')).toHaveLength(2);
  });

  it('TOOLS-63: a denied rename changes no file', async () => {
    const h = await toolHarness({ files });
    h.denyAll();
    await expect(
      h.call('edit', { mode: 'rename_symbol', name_path: 'formatUser', new_name: 'renderUser' }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    expect(h.read('src/app.ts')).toContain('formatUser');
    expect(await h.app.ws.history.list()).toEqual([]);
  });

  it('asks for a symbol_key when name_path is ambiguous, and validates its inputs', async () => {
    const h = await toolHarness({ files });
    await expect(
      h.call('edit', { mode: 'rename_symbol', name_path: 'save', new_name: 'store' }),
    ).rejects.toThrow(
      'name_path: save matches 2 symbols; pick one by symbol_key: src/store.ts::save::function, src/user-service.ts::UserService.save::method',
    );
    await expect(
      h.call('edit', { mode: 'rename_symbol', name_path: 'formatUser', new_name: 'not valid' }),
    ).rejects.toThrow(/new_name: "not valid" is not a valid identifier/);
    await expect(
      h.call('edit', { mode: 'insert_after_symbol', name_path: 'nothing', new_string: 'x' }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(h.call('edit', { mode: 'replace_symbol_body', name_path: 'main' })).rejects.toThrow(
      /name_path: main matches 2|new_string/,
    );
    await expect(h.call('edit', { mode: 'rename_symbol', new_name: 'x' })).rejects.toThrow(
      /needs name_path or symbol_key/,
    );
    // The default mode is still exact replacement.
    await expect(h.call('edit', { path: 'src/app.ts', new_string: 'x' })).rejects.toThrow(
      /old_string: replace mode needs/,
    );
  });
});
