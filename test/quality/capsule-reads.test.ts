/**
 * A run's end reads `edit_capsules` once on SQLite (issue 17 item 3): the run's own capsule and the
 * capsules left recording by runs that ended elsewhere come from one statement, and a capsule
 * another process left recording is still finalized there.
 * @module
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDb } from '../../src/store/db';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The capsule service's reads (not the test's own count). */
const capsuleReads = (texts: string[]) =>
  texts.filter((t) => /^SELECT (\*|run_id, session_id) FROM edit_capsules WHERE/.test(t));

describe('edit capsules at a run end', () => {
  it('STORE-63 a run that changed nothing reads edit_capsules once; a capsule stranded by another process is finalized', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two')], {
      extraConfig: { options: { edit_capsules: true } },
    });
    await app.agent.run({ prompt: 'warm up', yolo: true }); // statements prepared
    await vi.waitFor(async () => expect((await app.quality.capsules.status()).counts.total).toBe(0), {
      timeout: 10_000,
    });
    // Another svc on the same data dir crashed while its run was recording a capsule.
    const other = openDb({ dataDir: app.dataDir });
    other
      .prepare(
        `INSERT INTO edit_capsules (id, session_id, run_id, status, checkpoint_note, created_at)
         VALUES ('cap_gone', 'ses_gone', 'run_gone', 'recording', NULL, 1)`,
      )
      .run();
    expect((await app.quality.capsules.status()).counts.recording).toBe(1);

    const { texts } = countStatements(app.db);
    await app.agent.run({ prompt: 'answer', yolo: true });
    // Its run is unknown here, so it counts as interrupted: with no file history it is dropped.
    await vi.waitFor(
      () =>
        expect(other.prepare("SELECT count(*) AS n FROM edit_capsules WHERE id = 'cap_gone'").get()).toEqual({
          n: 0,
        }),
      { timeout: 10_000 },
    );
    const reads = capsuleReads(texts);
    // One read at the run's end (main: its capsule, then the stranded ones: two), then the
    // stranded capsule's own row before it is dropped.
    expect(reads.length).toBe(2);
    expect(reads[1]).toBe('SELECT * FROM edit_capsules WHERE run_id = ?');
  });

  it('STORE-163: with capsules off, a run end reads edit_capsules not at all while no other connection wrote', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two'), reply().text('three')]);
    await app.agent.run({ prompt: 'warm up', yolo: true });
    await app.quality.capsules.finalize({ sessionId: 'ses_none', runId: 'run_none', status: 'completed' });
    const { texts } = countStatements(app.db);
    await app.agent.run({ prompt: 'one more', yolo: true });
    await app.agent.run({ prompt: 'and another', yolo: true });
    // The run ends' finalizations are queued in the capsule service: wait for them.
    await app.quality.capsules.finalize({ sessionId: 'ses_none', runId: 'run_none', status: 'completed' });
    expect(texts.filter((t) => /\bedit_capsules\b/.test(t))).toEqual([]);
  });

  it('STORE-164: with capsules off, a capsule another connection left recording is seen and swept at the next run end', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two')]);
    await app.agent.run({ prompt: 'warm up', yolo: true });
    await app.quality.capsules.finalize({ sessionId: 'ses_none', runId: 'run_none', status: 'completed' });
    const other = openDb({ dataDir: app.dataDir });
    other
      .prepare(
        `INSERT INTO edit_capsules (id, session_id, run_id, status, checkpoint_note, created_at)
         VALUES ('cap_other', 'ses_other', 'run_other', 'recording', NULL, 1)`,
      )
      .run();
    await app.agent.run({ prompt: 'answer', yolo: true });
    // Its run is unknown here, so it counts as interrupted: with no file history it is dropped.
    await vi.waitFor(
      () =>
        expect(other.prepare("SELECT count(*) AS n FROM edit_capsules WHERE id = 'cap_other'").get()).toEqual(
          {
            n: 0,
          },
        ),
      { timeout: 10_000 },
    );
    other.close();
  });
});
