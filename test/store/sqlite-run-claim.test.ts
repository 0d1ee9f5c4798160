/**
 * A claim on SQLite (issue 17 item 3): a queued run with nothing running beside it in its session
 * is claimed in one statement (the checks inside the UPDATE); a run not found, not queued or
 * blocked answers as before, and a run blocked by a dead process is still taken.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/store/db';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const runStatements = (texts: string[]) => texts.filter((t) => /agent_runs\b/.test(t));

describe('a claim on SQLite', () => {
  it('STORE-82 a free queued run is claimed in one statement, in or out of a transaction; the row as a read gives it', async () => {
    const { db, ledger } = openTestLedger(opened);
    const first = await ledger.create({ ...RUN_INPUT });
    const counted = countStatements(db);
    const claimed = await ledger.claim(first.id);
    expect(runStatements(counted.texts)).toHaveLength(1);
    expect(counted.texts).toHaveLength(1);
    expect(claimed).toEqual({ ok: true, run: await ledger.get(first.id) });
    expect(claimed).toMatchObject({ ok: true, run: { status: 'running', runner: 'rnr_test' } });
    await ledger.update(first.id, { status: 'completed', finished_at: 1 });
    const second = await ledger.create({ ...RUN_INPUT, session_id: 'ses_1' });
    counted.texts.length = 0;
    db.exec('BEGIN IMMEDIATE');
    const inside = ledger.claim(second.id);
    db.exec('COMMIT');
    expect(runStatements(counted.texts)).toHaveLength(1);
    expect(await inside).toMatchObject({ ok: true, run: { id: second.id, status: 'running' } });
  });

  it('STORE-83 a claim that is not free answers as before: not found, not queued, blocked, or taken from a dead process', async () => {
    const { db, ledger } = openTestLedger(opened);
    await expect(ledger.claim('run_none')).rejects.toMatchObject({ code: 'not_found' });
    const first = await ledger.create({ ...RUN_INPUT });
    const second = await ledger.create({ ...RUN_INPUT });
    await ledger.claim(first.id);
    await expect(ledger.claim(first.id)).rejects.toMatchObject({ code: 'conflict' });
    expect(await ledger.claim(second.id)).toMatchObject({ ok: false, blocking: { id: first.id } });
    expect(await ledger.get(second.id)).toMatchObject({ status: 'queued' });
    db.prepare("UPDATE agent_runs SET runner = 'rnr_gone', pid = NULL WHERE id = ?").run(first.id);
    expect(await ledger.claim(second.id)).toMatchObject({
      ok: true,
      run: { id: second.id, status: 'running' },
    });
    expect(await ledger.get(first.id)).toMatchObject({ status: 'interrupted' });
  });

  it('COMPAT-PERF-73: a run inserted and claimed in one transaction is claimed without RETURNING *, answered as a read gives it', async () => {
    const { db, ledger } = openTestLedger(opened);
    const claims = (texts: string[]) =>
      texts.filter((t) => t.startsWith("UPDATE agent_runs SET status = 'running'"));
    // A compat start: the run created and claimed in one transaction.
    db.exec('BEGIN IMMEDIATE');
    const counted = countStatements(db);
    const run = await ledger.create({ ...RUN_INPUT });
    const claimed = await ledger.claim(run.id);
    vi.restoreAllMocks();
    db.exec('COMMIT');
    expect(claims(counted.texts)).toHaveLength(1);
    expect(claims(counted.texts)[0]).not.toContain('RETURNING'); // 0ca2824: `… RETURNING *`
    const stored = await ledger.get(run.id);
    expect(claimed).toEqual({ ok: true, run: stored });
    if (!claimed.ok) throw new Error('not claimed');
    expect(Object.keys(claimed.run)).toEqual(Object.keys(stored ?? {}));
    expect(claimed.run).toMatchObject({ status: 'running', runner: 'rnr_test', pid: process.pid });
    await ledger.update(run.id, { status: 'completed', finished_at: 1 });

    // Written to between its insert and its claim (a cancel asked): the row as the claim wrote it.
    db.exec('BEGIN IMMEDIATE');
    const asked = await ledger.create({ ...RUN_INPUT });
    await ledger.requestCancel(asked.id);
    const again = countStatements(db);
    const cancelled = await ledger.claim(asked.id);
    vi.restoreAllMocks();
    db.exec('COMMIT');
    expect(claims(again.texts)[0]).toContain('RETURNING *');
    expect(cancelled).toMatchObject({
      ok: true,
      run: { id: asked.id, status: 'running', cancel_requested: true },
    });
    expect(cancelled).toEqual({ ok: true, run: await ledger.get(asked.id) });
    await ledger.update(asked.id, { status: 'completed', finished_at: 1 });

    // Blocked in its session: not claimed, still queued, as before.
    const running = await ledger.create({ ...RUN_INPUT });
    await ledger.claim(running.id);
    db.exec('BEGIN IMMEDIATE');
    const blocked = await ledger.create({ ...RUN_INPUT });
    const answer = await ledger.claim(blocked.id);
    db.exec('COMMIT');
    expect(answer).toMatchObject({ ok: false, blocking: { id: running.id } });
    expect(await ledger.get(blocked.id)).toMatchObject({ status: 'queued' });
  });
});
