/**
 * Several svc processes on one data dir (issue 15, item 6). Pins:
 * - three processes opening a new data dir at once all succeed: migrations run once, under an
 *   exclusive transaction (never "table sessions already exists");
 * - ten `svc run` processes started together in one workspace all complete: writers wait their
 *   turn (busy timeout, BEGIN IMMEDIATE, retry of a busy start), never "database is locked".
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db';
import { migrations } from '../../src/store/migrations/index';
import { fakeProvider, type RecordedRequest, reply } from '../helpers/fake-provider';
import { BIN, type BinResult } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

function start(args: string[], cwd: string): Promise<BinResult> {
  return new Promise((resolve, reject) => {
    const home = join(cwd, '.home');
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        XDG_DATA_HOME: join(home, '.local', 'share'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('several processes on one data dir', () => {
  it('three processes opening a new data dir at once migrate it once', async () => {
    for (let round = 0; round < 3; round++) {
      const ws = tmpWorkspace();
      const results = await Promise.all([0, 1, 2].map(() => start(['session', 'list', '--json'], ws)));
      for (const result of results) {
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        expect(JSON.parse(result.stdout)).toMatchObject({ sessions: [] });
      }
      const db = openDb({ dataDir: join(ws, '.svc') });
      const applied = db.prepare('SELECT count(*) AS n FROM schema_migrations').get() as { n: number };
      db.close();
      expect(applied.n).toBe(migrations.length);
    }
  }, 120_000);

  it('ten svc run processes at once in one workspace all complete', async () => {
    // Each run calls a tool (more writes: tool rows, ledger events), then answers.
    const answer = (request: RecordedRequest) =>
      request.body.messages.some((m: { role: string }) => m.role === 'tool')
        ? reply().text('done')
        : reply().toolCall('todos', { todos: [{ content: 'one', status: 'pending' }] });
    const provider = await fakeProvider(Array.from({ length: 20 }, () => answer));
    const ws = tmpWorkspace({
      files: {
        'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n`,
      },
    });
    // The data dir exists (as after a first run): the race is between writers, not migrations.
    expect((await start(['session', 'list'], ws)).code).toBe(0);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => start(['run', '--yolo', `task ${i}`], ws)),
    );
    for (const result of results) {
      expect(result.stderr).not.toMatch(/locked/);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      expect(result.stdout).toBe('done\n');
    }
    expect(provider.requests).toHaveLength(20);
    const db = openDb({ dataDir: join(ws, '.svc') });
    const runs = db.prepare('SELECT status, count(*) AS n FROM agent_runs GROUP BY status').all();
    db.close();
    expect(runs).toEqual([{ status: 'completed', n: 10 }]);
    const failedTools = provider.requests
      .flatMap((r) => r.body.messages)
      .filter(
        (m: { role: string; content: string }) =>
          m.role === 'tool' &&
          /^(internal|unavailable|invalid_input|not_found|forbidden|conflict): /.test(m.content),
      );
    expect(failedTools).toEqual([]);
  }, 180_000);
});
