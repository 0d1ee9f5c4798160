/**
 * SQLite's pieces of a compat run's held preparation writes (p-promptheld, issue 17 item 3): a
 * write made right before the open batch's COMMIT (`StoreTransactions.beforeCommit`, src/store/batch-yield.ts), a
 * write made before a run's next append (`RunLedger.beforeNextAppend`), an append at the time an
 * event was held (`appendNow`'s `created_at`), and a prompt stack build held for an insert with
 * no promise (`PromptStackLedger.holdNow`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPromptStackLedger, PROMPT_STACK_RETENTION } from '../../src/observe/prompt-stack';
import type { PromptBuild, PromptStackStore } from '../../src/observe/prompt-stack-store';
import { commitBatch, type Db, enableGroupCommit, openDb, stepBatch } from '../../src/store/db';
import { sqliteTransactions } from '../../src/store/transactions';
import { openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';
import { tmpWorkspace } from '../helpers/tmp-workspace';

enableGroupCommit();

const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

const insert = (db: Db, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const ids = (db: Db) =>
  (db.prepare('SELECT id FROM sessions ORDER BY rowid').all() as { id: string }[]).map((r) => r.id);
const checkPhase = () => new Promise((resolve) => setImmediate(resolve));

describe('SQLite’s held preparation writes', () => {
  it('COMPAT-PERF-403: a write asked for before the batch’s COMMIT runs in the batch, after what the batch wrote, at its check phase or its close; none with no batch open', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    opened.push(db, other);
    const beforeCommit = sqliteTransactions(() => db).beforeCommit as (write: () => void) => boolean;
    const seen: string[] = [];
    // No batch open: refused, never run.
    expect(beforeCommit(() => seen.push('none'))).toBe(false);
    stepBatch(() => db);
    insert(db, 'ses_a');
    expect(
      beforeCommit(() => {
        seen.push(`held: in transaction ${db.inTransaction}`);
        insert(db, 'ses_held');
      }),
    ).toBe(true);
    insert(db, 'ses_b');
    expect(seen).toEqual([]);
    expect(ids(other)).toEqual([]);
    await checkPhase();
    expect(seen).toEqual(['held: in transaction true']);
    expect(db.inTransaction).toBe(false);
    expect(ids(other)).toEqual(['ses_a', 'ses_b', 'ses_held']);
    // A batch committed otherwise (a close, the exit: `commitBatch`) runs it too, once.
    stepBatch(() => db);
    insert(db, 'ses_c');
    expect(beforeCommit(() => insert(db, 'ses_closed'))).toBe(true);
    commitBatch(db);
    await checkPhase();
    expect(ids(other)).toEqual(['ses_a', 'ses_b', 'ses_held', 'ses_c', 'ses_closed']);
  });

  it('COMPAT-PERF-404: a write asked for before a run’s next append runs at it, once, before its row; another run’s append or a replaced ask does not run it; a held event keeps its time', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT, status: 'running' } as never);
    const other = await ledger.create({ ...RUN_INPUT, status: 'running' } as never);
    const held = ledger.appendNow!(run.id, 'first', {}, 7);
    expect(held.created_at).toBe(7);
    let writes = 0;
    ledger.beforeNextAppend!(run.id, () => {
      writes++;
      ledger.appendNow!(run.id, 'held', {}, 8);
    });
    ledger.appendNow!(other.id, 'elsewhere', {});
    expect(writes).toBe(0);
    ledger.appendNow!(run.id, 'next', {});
    ledger.appendNow!(run.id, 'after', {});
    expect(writes).toBe(1);
    ledger.beforeNextAppend!(run.id, () => writes++);
    ledger.beforeNextAppend!(run.id, undefined);
    await ledger.append(run.id, 'last', {});
    expect(writes).toBe(1);
    const events = await ledger.events(run.id);
    const at = Object.fromEntries(events.map((e) => [e.type, e.created_at]));
    expect([at.first, at.held]).toEqual([7, 8]);
    const types = events.map((e) => e.type);
    expect(types.slice(types.indexOf('first'))).toEqual(['first', 'held', 'next', 'after', 'last']);
    expect(db.inTransaction).toBe(false);
  });

  it('COMPAT-PERF-405: a build recorded during holdNow is not written; the hold’s end gives its insert, made at the call, no promise below the retention', async () => {
    const inserted: string[] = [];
    const s: PromptStackStore = {
      insert: async (build: PromptBuild) => {
        inserted.push(build.build_id);
        return inserted.length;
      },
      insertNow: (build: PromptBuild) => {
        inserted.push(build.build_id);
        return inserted.length;
      },
      pruneThrough: async () => {},
      recent: async () => [],
      count: async () => inserted.length,
      probe: async () => {},
    };
    let n = 0;
    const ledger = createPromptStackLedger({
      store: s,
      clock: { now: () => 1 },
      ids: { next: (p: string) => `${p}_${++n}` },
    } as never);
    const record = (runId: string) =>
      ledger.record({
        runId,
        agent: 'build',
        system: 'base',
        sections: [{ name: 'base', source: 'builtin', text: 'base' }],
      });
    const end = ledger.holdNow('run_a');
    await record('run_a');
    await record('run_b');
    expect(inserted).toEqual(['psb_2']);
    const write = end();
    expect(inserted).toEqual(['psb_2']);
    expect(write?.()).toBeUndefined();
    expect(inserted).toEqual(['psb_2', 'psb_1']);
    // The hold ended: written by record again; nothing recorded during a hold: nothing to write.
    await record('run_a');
    expect(inserted).toHaveLength(3);
    expect(ledger.holdNow('run_c')()).toBeUndefined();
    expect(PROMPT_STACK_RETENTION).toBeGreaterThan(3);
  });
});
