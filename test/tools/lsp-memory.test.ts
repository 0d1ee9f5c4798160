/**
 * tsserver's heap has a limit (found by probing): one type-level recursion (a permutation type of
 * nine letters) took the built-in TypeScript server to 4.2 GB. Pins: the tsservers the built-in
 * server starts run with `--max-old-space-size` of `options.lsp.tsserver_memory_mb` (3072 by
 * default), passed as typescript-language-server's `maxTsServerMemory`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const TS_FILES = {
  'package.json': '{ "name": "demo", "private": true }\n',
  'tsconfig.json': '{ "compilerOptions": { "strict": true, "noEmit": true }, "include": ["src"] }\n',
  'src/a.ts': 'export const label: string = 1;\n',
};

/** The command lines of this process's descendants (sandboxed ones too: /proc shows every pid). */
function descendants(): string[][] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const ours = (pid: number) => {
    for (let at = parent.get(pid), hops = 0; at && hops < 64; at = parent.get(at), hops++)
      if (at === process.pid) return true;
    return false;
  };
  const lines: string[][] = [];
  for (const pid of parent.keys()) {
    if (!ours(pid)) continue;
    try {
      lines.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'));
    } catch {
      // gone meanwhile
    }
  }
  return lines;
}

const tsservers = () => descendants().filter((argv) => argv.some((a) => a.endsWith('tsserver.js')));

describe('the built-in TypeScript server has a heap limit', { timeout: 120_000 }, () => {
  it('LSP-MEM-1: its tsservers run with --max-old-space-size (3072 by default, options.lsp.tsserver_memory_mb)', async () => {
    const h = await toolHarness({
      files: TS_FILES,
      config: { options: { lsp: { diagnostics_wait_seconds: 60 } } },
    });
    const result = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 60 });
    expect(result.counts.error).toBe(1);
    const started = tsservers();
    expect(started.length).toBeGreaterThan(0);
    for (const argv of started) expect(argv).toContain('--max-old-space-size=3072');
    await h.app.close();
    // The next server's tsservers are told apart from these by being the only ones left.
    for (let i = 0; i < 100 && tsservers().length > 0; i++) await new Promise((r) => setTimeout(r, 100));

    const small = await toolHarness({
      files: TS_FILES,
      config: { options: { lsp: { diagnostics_wait_seconds: 60, tsserver_memory_mb: 1024 } } },
    });
    await small.call('diagnostics', { path: 'src/a.ts', wait_seconds: 60 });
    const limited = tsservers();
    expect(limited.length).toBeGreaterThan(0);
    for (const argv of limited) expect(argv).toContain('--max-old-space-size=1024');
  });
});
