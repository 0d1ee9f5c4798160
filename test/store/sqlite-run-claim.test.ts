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
});
