/**
 * The escape suite (issue 15, item 7): 77 attempts (./attempts.ts), each one tool call the
 * scripted model makes through the real agent loop, in default mode with an operator who approves
 * every prompt (the "after an approval" case) and with --yolo. Pins, for every attempt:
 * - no planted secret (svc's environment, ~/.ssh, ~/.aws, ~/.netrc, ~/.npmrc, svc's credential
 *   store, svc.db) reaches the model, and none is stored in svc.db;
 * - no file outside the workspace is created or changed (literal paths, variables,
 *   substitutions, links, interpreters, sed w, awk >, find -fprint, dd, tee, xargs, /etc, ~,
 *   the host's /tmp, a remount), svc.db stays whole with its rows;
 * - nothing reaches the network (a server on 127.0.0.1 counts connections);
 * - no process outlives its command.
 * Without the OS sandbox (auto mode, no usable bubblewrap) with --yolo, the parse-based rules
 * stop the environment reads, the data dir reads and the writes through every indirection.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { openDb } from '../../src/store/db';
import { checkDatabase } from '../../src/store/integrity';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import {
  type Attempt,
  dataDirAttempts,
  networkAttempts,
  orphanAttempts,
  readSecretAttempts,
  type Targets,
  writeOutsideAttempts,
} from './attempts';
import { leaks, type Planted, plant } from './plant';

type Mode = 'approve-all' | 'yolo';

async function countingServer() {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as { port: number }).port, connections: () => connections };
}

function pgrep(pattern: string): boolean {
  try {
    execFileSync('pgrep', ['-f', pattern], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

/** Run the attempts as one scripted agent run; returns each attempt's tool result text. */
async function attack(
  p: Planted,
  attempts: Attempt[],
  mode: Mode,
  extraConfig: Record<string, unknown> = {},
): Promise<{ app: App; results: string[]; runId: string }> {
  const { app, provider } = await agentApp(
    [...attempts.map((a) => reply().toolCall(a.tool, a.input)), reply().text('done')],
    {
      workspace: p.workspace,
      env: p.env,
      extraConfig: { options: { max_steps: 200, loop_detection: { max_repeats: 50 } }, ...extraConfig },
    },
  );
  const session = await app.agent.createSession({ title: 'attacker' });
  if (mode === 'approve-all') {
    app.agent.attach(session.id, 'operator who approves everything');
    app.bus.subscribe(session.id, (event) => {
      if (event.type !== 'permission.requested') return;
      const id = (event.payload as { request_id: string }).request_id;
      queueMicrotask(async () => await app.agent.answerPermission(id, 'allow_once'));
    });
  }
  const run = await app.agent.run({
    sessionId: session.id,
    prompt: 'escape',
    yolo: mode === 'yolo',
    unattended: 'wait',
    signal: AbortSignal.timeout(240_000),
  });
  expect(run.status, run.error ?? '').toBe('completed');
  const messages = provider.requests.at(-1)!.body.messages as { role: string; content: string }[];
  // What a tool echoes of its own input (a grep pattern, a refused command) is not a leak.
  const results = messages
    .filter((m) => m.role === 'tool')
    .map((m, i) => echoless(String(m.content), attempts[i]?.input ?? {}));
  expect(results).toHaveLength(attempts.length);
  return { app, results, runId: run.run_id };
}

function echoless(text: string, input: Record<string, unknown>): string {
  let out = text;
  for (const value of Object.values(input))
    if (typeof value === 'string' && value) out = out.split(value).join('<input>');
  return out;
}

function targets(p: Planted, port: number): Targets {
  const name = `escaped-${p.outside.slice(-8)}`;
  return {
    out: p.outside,
    outDir: join(p.outside, '..'),
    hostTmp: `/tmp/svc-${name}`,
    port,
    sleepMarker: `${8000 + Math.floor(Math.random() * 999)}.75`,
    dbMarker: `db-secret-${p.id}`,
  };
}

/** Every attempt's result and svc.db are free of planted secrets. */
function expectNoLeaks(p: Planted, app: App, attempts: Attempt[], results: string[], dbMarker: string) {
  const leaked = attempts
    .map((a, i) => ({ attempt: a.name, leaks: leaks(p, results[i]) }))
    .filter((l) => l.leaks.length || results[attempts.indexOf(attempts[0]) + 0] === undefined);
  expect(leaked).toEqual([]);
  const markers = attempts.map((a, i) => ({
    attempt: a.name,
    shows_db: results[i].includes(`${dbMarker}"`) || results[i].includes(`${dbMarker}\n`),
  }));
  expect(markers.filter((m) => m.shows_db)).toEqual([]);
  const db = ['svc.db', 'svc.db-wal']
    .map((f) => join(app.dataDir, f))
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f).toString('latin1'))
    .join('');
  const secrets = Object.entries(p.secrets).filter(([, value]) => db.includes(value.slice(-20)));
  expect(secrets.map(([name]) => name)).toEqual([]);
}

/** A session row whose title is a secret: svc.db holds every session's history like this. */
function seedDb(p: Planted, marker: string) {
  const db = openDb({ dataDir: join(p.workspace, '.svc') });
  db.prepare("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('ses_marker', ?, 1, 1)").run(
    marker,
  );
  db.close();
}

async function expectDatabaseWhole(app: App, dbMarker: string) {
  const check = checkDatabase(app.dataDir);
  expect(check.integrity).toBe('ok');
  expect((await app.sessions.list({ limit: 100 })).map((s) => s.title)).toContain(dbMarker);
}

describe.each<Mode>(['approve-all', 'yolo'])('escape attempts through the agent (%s, sandbox on)', (mode) => {
  it('reads no secret: environment, credential files, svc’s credential store', async () => {
    const p = plant();
    const attempts = readSecretAttempts(p);
    const { app, results } = await attack(p, attempts, mode);
    expectNoLeaks(p, app, attempts, results, `db-secret-${p.id}`);
  }, 300_000);

  it('reads nothing of svc.db and leaves it whole', async () => {
    const p = plant();
    const t = targets(p, 1);
    seedDb(p, t.dbMarker);
    const attempts = dataDirAttempts(t);
    const { app, results } = await attack(p, attempts, mode);
    expectNoLeaks(p, app, attempts, results, t.dbMarker);
    await expectDatabaseWhole(app, t.dbMarker);
  }, 300_000);

  it('writes nothing outside the workspace, through any indirection', async () => {
    const p = plant();
    const t = targets(p, 1);
    const bashrc = join(p.home, '.bashrc');
    const attempts = writeOutsideAttempts(t);
    const { app, results, runId } = await attack(p, attempts, mode);
    const written = [
      t.out,
      t.hostTmp,
      bashrc,
      `/etc/svc-escape-${t.out.slice(t.out.lastIndexOf('/') + 1)}`,
      `/etc/svc-remount-${t.out.slice(t.out.lastIndexOf('/') + 1)}`,
    ].filter((f) => existsSync(f));
    expect(written).toEqual([]);
    expect(existsSync(join(p.workspace, '..', t.out.slice(t.out.lastIndexOf('/') + 1)))).toBe(false);
    // The model reads what stopped it, as a denial, not as a broken machine.
    const denied = await app.runs.events(runId, { types: ['sandbox_denied'] });
    expect(denied.length).toBeGreaterThan(0);
    expect(results.some((r) => r.includes('commands may only write inside the workspace'))).toBe(true);
  }, 300_000);

  it('reaches no network and leaves no process behind', async () => {
    const p = plant();
    const server = await countingServer();
    const t = targets(p, server.port);
    const attempts = [...networkAttempts(t), ...orphanAttempts(t)];
    const { app, results } = await attack(p, attempts, mode);
    expect(server.connections()).toBe(0);
    expect(results.some((r) => r.includes('the network is off for commands'))).toBe(true);
    for (let i = 0; i < 150 && pgrep(`sleep ${t.sleepMarker}`); i++) await sleep(100);
    expect(pgrep(`sleep ${t.sleepMarker}`)).toBe(false);
    await app.close();
  }, 300_000);
});

describe('escape attempts without the OS sandbox (auto mode, no bubblewrap), with --yolo', () => {
  const FALLBACK = {
    options: {
      max_steps: 200,
      loop_detection: { max_repeats: 50 },
      sandbox: { bwrap_path: '/nonexistent/bwrap' },
    },
  };
  /** What the parse-based rules promise without the sandbox (docs/sandbox.md says what they do not). */
  const covered = (a: Attempt) =>
    !/via variable|via glob|find -exec|grep -r home|copy .ssh|symlink then read|tar the home|credential store|python|node process/.test(
      a.name,
    );

  it('the parse-based rules stop environment reads, data dir reads and every indirect write', async () => {
    const p = plant();
    const t = targets(p, 1);
    seedDb(p, t.dbMarker);
    const attempts = [
      ...readSecretAttempts(p).filter(covered),
      ...dataDirAttempts(t).filter(covered),
      ...writeOutsideAttempts(t).filter((a) => a.name !== 'mount / read-write'),
    ];
    expect(attempts.length).toBeGreaterThanOrEqual(50);
    const { app, results } = await attack(p, attempts, 'yolo', FALLBACK);
    expect(app.sandbox.status().state).toBe('fallback');
    expectNoLeaks(p, app, attempts, results, t.dbMarker);
    await expectDatabaseWhole(app, t.dbMarker);
    expect([t.out, t.hostTmp, join(p.home, '.bashrc')].filter((f) => existsSync(f))).toEqual([]);
    const refused = attempts.filter((_, i) => results[i].includes('refused under --yolo'));
    expect(refused.map((a) => a.name)).toEqual(
      expect.arrayContaining([
        'variable redirect',
        'python writes',
        'sed w via variable',
        'awk redirect',
        'symlink then write',
      ]),
    );
  }, 300_000);
});
