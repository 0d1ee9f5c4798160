/**
 * The statements of a step's writes on SQLite (issue 17 item 2): a write that answers the row it
 * wrote reads it back in the same statement (`RETURNING *`), not with a second statement, and
 * answers the row exactly as a read of it gives it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSessionStore } from '../../src/sessions/session-store';
import type { Db } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { countStatements, openTestDb, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

describe('a step’s writes on SQLite', () => {
  it('STORE-1 a message update is one statement and answers the row as a read gives it', async () => {
    const { db } = openTestDb(opened);
    const sessions = createSessionStore({
      db: () => db,
      clock: systemClock,
      ids: createIds(),
      workspace: '/w',
    });
    const session = await sessions.create({ title: 't' });
    const appended = await sessions.appendMessage({
      session_id: session.id,
      role: 'assistant',
      parts: [{ type: 'tool-call', tool_call_id: 'c1', tool: 'read', input: { path: 'a' } }],
      finished: false,
    });
    await sessions.updateMessage(appended.id, { parts: [{ type: 'text', text: 'warm' }] });
    const counted = countStatements(db);
    const updated = await sessions.updateMessage(appended.id, {
      parts: [{ type: 'text', text: 'hello' }],
      usage: { input_tokens: 3, output_tokens: 2 },
      cost: 0.5,
      finished: true,
    });
    expect(counted.texts).toHaveLength(1);
    expect(counted.texts[0]).toMatch(/^UPDATE messages .* RETURNING \*$/);
    vi.restoreAllMocks();
    expect(updated).toEqual(await sessions.getMessage(appended.id));
    expect(updated.parts).toEqual([{ type: 'text', text: 'hello' }]);
    expect(updated.finished_at).not.toBeNull();
    // A patch without parts keeps the stored ones; an unknown message is not_found.
    expect((await sessions.updateMessage(appended.id, { cost: 1 })).parts).toEqual(updated.parts);
    await expect(sessions.updateMessage('msg_none', { cost: 1 })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('STORE-2 a run update is one statement and answers the run as a read gives it', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT, status: 'running' });
    await ledger.update(run.id, { steps: 1 });
    const counted = countStatements(db);
    const usage = { input_tokens: 10, output_tokens: 2, reasoning_tokens: 1, cached_input_tokens: 0 };
    const updated = await ledger.update(run.id, { steps: 2, usage, cost: 0.25 });
    expect(counted.texts).toHaveLength(1);
    // The run's row this process inserted: only the columns not fixed nor set are returned (p-sqlrow).
    expect(counted.texts[0]).toMatch(/^UPDATE agent_runs .* RETURNING status, model, /);
    expect(counted.texts[0]).not.toMatch(/RETURNING .*\b(\*|prompt|options)\b/);
    vi.restoreAllMocks();
    expect(updated).toEqual(await ledger.get(run.id));
    expect(updated).toMatchObject({ steps: 2, usage, cost: 0.25, options: { max_steps: 3 } });
    await expect(ledger.update('run_none', { steps: 1 })).rejects.toMatchObject({ code: 'not_found' });
  });
});
