/**
 * `svc run` on Node < 22.1 loads the CommonJS build through V8's code cache (bin/code-cache.cjs,
 * issue 17). Pins: the same answer with and without a cache, the cache written on the first run
 * and used (not rewritten) on the next, a corrupt or foreign cache ignored and rewritten,
 * SVC_CODE_CACHE=0 writing nothing, and a package loaded on demand (the fetch tool's HTML
 * converter) still loading when the chunk that loads it came from the cache. On Node 22.1+ the command uses Node's own compile cache and
 * writes none of these files.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const ROOT = resolve(__dirname, '../..');
const COMMAND = join(ROOT, 'bin', 'svc.cjs');
const nodeCompileCache =
  typeof createRequire(import.meta.url)('node:module').enableCompileCache === 'function';

function svc(args: string[], cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    const child = spawn(process.execPath, [COMMAND, ...args], {
      cwd,
      env: { PATH: process.env.PATH, HOME: join(cwd, '.home'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

async function hello(cacheHome: string, extra: Record<string, string> = {}) {
  const fake = await fakeProvider([reply().text('hello from the model')]);
  const ws = tmpWorkspace({
    files: {
      'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${fake.url}"\n[models]\nlarge = "fake/m1"\n`,
    },
  });
  return svc(['run', 'say hello', '--yolo'], ws, { XDG_CACHE_HOME: cacheHome, ...extra });
}

function entries(cacheHome: string): Map<string, number> {
  const root = join(cacheHome, 'svc', 'code-cache');
  const found = new Map<string, number>();
  if (!existsSync(root)) return found;
  for (const dir of readdirSync(root)) {
    for (const name of readdirSync(join(root, dir))) {
      found.set(join(root, dir, name), statSync(join(root, dir, name)).mtimeMs);
    }
  }
  return found;
}

describe.skipIf(nodeCompileCache)('svc run through the code cache (Node < 22.1)', () => {
  it('writes the cache on the first run, uses it on the next, and answers the same', async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    const first = await hello(cacheHome);
    expect(first).toMatchObject({ code: 0, stdout: 'hello from the model\n', stderr: '' });
    const written = entries(cacheHome);
    expect([...written.keys()].some((f) => /[\\/]main\.cjs\.bin$/.test(f))).toBe(true);
    expect([...written.keys()].some((f) => /[\\/]cli-.*\.cjs\.bin$/.test(f))).toBe(true);
    const second = await hello(cacheHome);
    expect(second).toEqual(first);
    expect(entries(cacheHome)).toEqual(written);
    const off = await hello(cacheHome, { SVC_CODE_CACHE: '0' });
    expect(off).toEqual(first);
  });

  it('ignores a corrupt or foreign cache and writes it again', async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    expect((await hello(cacheHome)).code).toBe(0);
    const files = [...entries(cacheHome).keys()];
    const damage = [
      (b: Buffer) => b.subarray(0, Math.floor(b.length / 2)), // truncated
      (b: Buffer) => Buffer.from(b.toString('latin1').replace(/"key":"v\d+/, '"key":"v0'), 'latin1'), // another Node
      (b: Buffer) => {
        const c = Buffer.from(b);
        c[c.length - 100] ^= 0xff; // one byte flipped in the payload
        return c;
      },
      () => Buffer.from('not a cache at all'),
    ];
    files.forEach((file, i) => {
      writeFileSync(file, damage[i % damage.length](readFileSync(file)));
    });
    const damaged = new Map(files.map((f) => [f, readFileSync(f)]));
    const again = await hello(cacheHome);
    expect(again).toMatchObject({ code: 0, stdout: 'hello from the model\n', stderr: '' });
    const rewritten = files.filter((f) => !readFileSync(f).equals(damaged.get(f) as Buffer));
    // every file the run loaded was rewritten (the rest belong to chunks this run did not load)
    expect(rewritten.length).toBeGreaterThan(0);
    expect(rewritten).toContainEqual(expect.stringMatching(/[\\/]main\.cjs\.bin$/));
  });

  it('loads a package on demand from a cached chunk (fetch converts HTML with node-html-markdown)', async () => {
    const page = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><h1>Cached</h1><p>page <b>body</b></p></body></html>');
    });
    await new Promise<void>((done) => page.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    const cacheHome = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    try {
      for (const round of [1, 2]) {
        const fake = await fakeProvider([
          reply().toolCall('fetch', { url, format: 'markdown' }),
          reply().text(`fetched ${round}`),
        ]);
        const ws = tmpWorkspace({
          files: {
            'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${fake.url}"\n[models]\nlarge = "fake/m1"\n`,
          },
        });
        const result = await svc(['run', 'fetch it', '--yolo'], ws, { XDG_CACHE_HOME: cacheHome });
        expect(result).toMatchObject({ code: 0, stdout: `fetched ${round}\n`, stderr: '' });
        expect(JSON.stringify(fake.requests[1].body)).toContain('# Cached');
      }
      expect(entries(cacheHome).size).toBeGreaterThan(0);
    } finally {
      page.close();
    }
  });

  it('writes nothing with SVC_CODE_CACHE=0', async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    expect((await hello(cacheHome, { SVC_CODE_CACHE: '0' })).stdout).toBe('hello from the model\n');
    expect(entries(cacheHome).size).toBe(0);
  });
});
