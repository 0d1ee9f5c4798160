// The file checks every compat request makes (its context files' stamps, the credential file's
// identity) shared by the requests of one turn of the event loop (issue 17 item 3, p-sqlcpu4):
// counted as `node:fs` calls, and what a later turn sees.
import * as fs from 'node:fs';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { findContextFiles } from '../../src/agent/environment';
import { createCredentialStore, credentialFilePath } from '../../src/providers/credential-store';
import { currentTurn } from '../../src/util/turn';

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  return { ...real, statSync: vi.fn(real.statSync), existsSync: vi.fn(real.existsSync) };
});

const NAMES = ['AGENTS.md', 'CLAUDE.md', 'svc.md'];
const laterTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const fileCalls = () => vi.mocked(fs.statSync).mock.calls.length + vi.mocked(fs.existsSync).mock.calls.length;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-turn-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('file checks shared by one turn', () => {
  it('COMPAT-PERF-440: the context files asked for by several runs in one turn are checked once; an edit is seen by the next turn', async () => {
    // Outside any repository (as the compat bench's workspace): a stamp of the workspace, a
    // `.git` look-up for each parent, an hour old so the stamps are trusted.
    const ws = join(root, 'a', 'ws');
    mkdirSync(ws, { recursive: true });
    writeFileSync(join(ws, 'AGENTS.md'), 'rules v1');
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(join(ws, 'AGENTS.md'), past, past);
    utimesSync(ws, past, past);
    expect(findContextFiles(ws, NAMES).map((f) => f.content)).toEqual(['rules v1']);
    await laterTurn();

    const before = fileCalls();
    const first = findContextFiles(ws, NAMES);
    const checked = fileCalls() - before;
    expect(checked).toBeGreaterThan(0);
    // Four more runs' asks in the same turn: the first's check holds, no file call.
    for (let i = 0; i < 4; i++) expect(findContextFiles(ws, NAMES)).toEqual(first);
    expect(fileCalls() - before).toBe(checked);

    // An edit (same size) in this turn: the turn keeps its answer; the next turn checks and reads it.
    writeFileSync(join(ws, 'AGENTS.md'), 'rules v2');
    expect(findContextFiles(ws, NAMES)[0]?.content).toBe('rules v1');
    await laterTurn();
    expect(findContextFiles(ws, NAMES)[0]?.content).toBe('rules v2');
  });

  it("COMPAT-PERF-441: the credential file's stamp asked by several model resolutions in one turn is one stat; a write or a later turn stats again", async () => {
    const env = {
      HOME: join(root, 'home'),
      XDG_CONFIG_HOME: join(root, 'home', '.config'),
      XDG_DATA_HOME: join(root, 'home', '.local', 'share'),
    };
    const path = credentialFilePath(env);
    mkdirSync(dirname(path), { recursive: true });
    const write = (value: string) =>
      writeFileSync(
        path,
        JSON.stringify({ version: 1, credentials: { lab: { kind: 'api_key', value, stored_by: 'test' } } }),
      );
    write('lab-key-aaaaaaaaaaaa');
    const store = createCredentialStore({ env, backend: 'file' });
    await laterTurn();

    const stats = () => vi.mocked(fs.statSync).mock.calls.length;
    const before = stats();
    const stamp = store.stamp();
    for (let i = 0; i < 4; i++) expect(store.stamp()).toBe(stamp);
    expect(stats() - before).toBe(1);

    // Replaced by another process in this turn: this turn's stamp holds; a read still sees the file.
    const other = createCredentialStore({ env, backend: 'file' });
    write('lab-key-bbbbbbbbbbbbbbbb');
    expect(store.stamp()).toBe(stamp);
    expect(store.get('lab')?.value).toBe('lab-key-bbbbbbbbbbbbbbbb');
    // The read's stat is the turn's stamp from then on.
    const afterRead = store.stamp();
    expect(afterRead).not.toBe(stamp);
    // A write by a store of this process: the stamp asked after it is stat'ed again.
    other.set('lab', { kind: 'api_key', value: 'lab-key-cccccccccccc', stored_by: 'other' } as never);
    const atWrite = stats();
    const afterWrite = store.stamp();
    expect(stats() - atWrite).toBe(1);
    expect(afterWrite).not.toBe(afterRead);
    // The next turn: stat'ed again.
    await laterTurn();
    const atTurn = stats();
    expect(store.stamp()).toBe(afterWrite);
    expect(stats() - atTurn).toBe(1);
  });

  it('COMPAT-PERF-442: the turn number holds until the check phase, one more after it', async () => {
    const turn = currentTurn();
    await Promise.resolve();
    expect(currentTurn()).toBe(turn);
    await laterTurn();
    expect(currentTurn()).toBe(turn + 1);
    // A turn nobody asked in does not count.
    await laterTurn();
    await laterTurn();
    expect(currentTurn()).toBe(turn + 2);
  });
});
