/**
 * A run's finish on SQLite tells whether its session has queued runs (issue 17 item 3,
 * p-sqlcpu3): the finish's `UPDATE agent_runs … RETURNING *` answers it in the same statement,
 * inside the finish's transaction, so the queue drain after it reads the queue only when there is
 * one (PostgreSQL's finish statement tells it too, p-pgcompat). Pins: a compat request's end makes
 * no queue read; a run queued on the session by another connection while a run streams is started
 * by that run's finish, as a read after the commit found it.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Db, openDb } from '../../src/store/db';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';
import { compatServer, sseData } from '../http/compat-helpers';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const QUEUE_READ =
  "SELECT * FROM agent_runs WHERE session_id = ? AND status = 'queued' ORDER BY created_at, rowid";
const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }], stream: true });

describe('a finish that tells the queue on SQLite', () => {
  it('COMPAT-PERF-70: a compat request ends with no read of its session’s queue; its finish’s UPDATE answered it', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const warm = await post('/v1/chat/completions', body('warm'));
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', body('count'));
    expect(response.status).toBe(200);
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    const [run] = await app.runs.list({ limit: 1 });
    await app.agent.wait(run.id);
    await app.agent.waitIdle(run.session_id);
    await new Promise((resolve) => setImmediate(resolve));
    // 0ca2824: the drain after the finish read the queue (1 a request).
    expect(counted.texts.filter((t) => t === QUEUE_READ)).toHaveLength(0);
    const finishes = counted.texts.filter((t) => /^UPDATE agent_runs SET status = \?/.test(t));
    expect(finishes).toHaveLength(1);
    expect(finishes[0]).toContain("queued.status = 'queued'");
    expect(run.status).toBe('completed');
  });

  it('COMPAT-PERF-71: a run queued by another connection while one streams starts after that run’s finish', async () => {
    let release = () => {};
    const paused = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { app } = await agentApp([reply().text('first answer').pauseAt(1, paused), reply().text('second')]);
    const session = await app.agent.createSession({ title: 'q71' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'first', yolo: true });
    // Another process queues a prompt on the session meanwhile (its own connection to the file).
    const other = openDb({ dataDir: join(app.db.name, '..') });
    opened.push(other);
    const queued = { id: 'run_q71_other' };
    const now = Date.now();
    other
      .prepare(
        `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, options, created_at, updated_at)
         VALUES (?, ?, ?, 'queued', 'build', 'cli', 'second', '{}', ?, ?)`,
      )
      .run(queued.id, session.id, session.id, now, now);
    const reads = vi.spyOn(app.runs, 'queued');
    release();
    expect((await app.agent.wait(run_id)).status).toBe('completed');
    // The finish said the session had a queued run: the drain read it and started it.
    expect((await app.agent.wait(queued.id)).status).toBe('completed');
    await app.agent.waitIdle(session.id);
    // The drain after the first finish read the queue; the second finish found it empty.
    expect(reads).toHaveBeenCalledTimes(1);
  });
});
