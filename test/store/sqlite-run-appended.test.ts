/**
 * The run ledger's own appends on SQLite (issue 17 item 3): a run this process created and ended
 * answers its refused-call check from the events it appended, without reading them back; a run
 * another writer appended to is read as before.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { refusedCall } from '../../src/agent/refused';
import { createRunLedger } from '../../src/runs/run-ledger';
import type { Db } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const denied = {
  tool: 'write',
  is_error: true,
  failure: { code: 'tool_refused', summary: 'no', next: 'ask', details: { reason: 'denied' } },
};
const eventReads = (texts: string[]) => texts.filter((t) => t.startsWith('SELECT * FROM agent_run_events'));

describe('a run’s events as this process appended them (SQLite)', () => {
  it('STORE-80 a run created and ended here answers its refused call without reading its events, once; as the read answers it', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    await ledger.append(run.id, 'tool.finished', { tool: 'read', is_error: false });
    await ledger.append(run.id, 'tool.finished', denied);
    await ledger.append(run.id, 'run.finished', { status: 'completed' });
    const counted = countStatements(db);
    const fromAppends = await refusedCall(ledger, run.id, true);
    expect(eventReads(counted.texts)).toEqual([]);
    const read = await refusedCall(ledger, run.id, false);
    expect(eventReads(counted.texts)).toHaveLength(1);
    expect(fromAppends).toEqual({
      tool: 'write',
      reason: 'denied',
      code: 'tool_refused',
      summary: 'no',
      next: 'ask',
    });
    expect(fromAppends).toEqual(read);
    // Once per run: a second ask reads.
    expect(await refusedCall(ledger, run.id, true)).toEqual(read);
    expect(eventReads(counted.texts)).toHaveLength(2);
  });

  it('STORE-81 a run another writer appended to, or one not created here, is read: its events as stored', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    // Another writer's refusal between two of this process's appends (a gap in the seqs seen here).
    db.prepare(
      `INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
       VALUES (?, 'ses_1', 2, 'tool.finished', ?, 1)`,
    ).run(run.id, JSON.stringify(denied));
    await ledger.append(run.id, 'run.finished', { status: 'completed' });
    const counted = countStatements(db);
    expect(await refusedCall(ledger, run.id, true)).toMatchObject({ tool: 'write', reason: 'denied' });
    expect(eventReads(counted.texts)).toHaveLength(1);
    // A run another ledger (writer) created: its first event was not appended here.
    const elsewhere = createRunLedger({
      clock: systemClock,
      ids: createIds(),
      runner: 'rnr_other',
      db: () => db,
      dbPath: 'unused',
    });
    const other = await elsewhere.create({ ...RUN_INPUT });
    await elsewhere.append(other.id, 'tool.finished', denied);
    await ledger.append(other.id, 'run.finished', { status: 'completed' });
    expect(await refusedCall(ledger, other.id, true)).toMatchObject({ tool: 'write' });
    expect(eventReads(counted.texts)).toHaveLength(2);
  });
});
