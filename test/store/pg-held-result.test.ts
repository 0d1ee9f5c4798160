/**
 * A tool step's only result held for its step end on PostgreSQL (issue 18 item 6, p-pgtoolend):
 * the tool message, its `tool.finished` run event and its session events go in the step end's
 * statement (`StepRecorder.heldClose`, src/sessions/pg-step-close-repository.ts `createdCtes`), not
 * in a statement of their own. Pinned: a steady tool step is two statements; the same run events,
 * session events and messages, in the same order, as the same script on SQLite.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SqlClient } from '../../src/store/postgres/client';
import { echoTool } from '../helpers/agent-harness';
import { echoSteps } from '../helpers/fake-provider';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { loggedEvents, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** A message INSERT: alone, or with the run's row (the step end). */
const MESSAGE_INSERT = /INSERT INTO messages/;
const STEP_END = /UPDATE agent_runs/;

describe.skipIf(!pg.available)('a tool step`s only result in its step end (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const runOnce = (postgres: boolean, steps: number) =>
    storeRun(postgres ? pg.cluster() : undefined, echoSteps(steps), {
      tools: [echoTool],
      title: 'held result',
      closers,
    });

  it('STORE-PG-350: a tool step`s tool message and tool.finished ride in its step end: message INSERTs of their own 2n+2 → n+2, same events and order as SQLite', async () => {
    const steps = 3;
    const lite = await runOnce(false, steps);
    const r = await runOnce(true, steps);
    expect(r.status).toBe('completed');

    const inserts = r.sent.filter((text) => MESSAGE_INSERT.test(text));
    // The prompt and the assistant INSERTs (with tool.started) alone (before: the tool messages too,
    // 2n+2); the tool messages in the tool steps' ends, the last step's text in its own (p-heldstep).
    expect(inserts.filter((text) => !STEP_END.test(text))).toHaveLength(steps + 1);
    expect(inserts.filter((text) => STEP_END.test(text))).toHaveLength(steps + 1);

    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const seqs = r.runEvents.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const finished = r.runEvents.filter((e) => e.type === 'tool.finished');
    expect(finished).toHaveLength(steps);
    for (const event of finished) {
      // Right after its start, right before its step's end.
      const at = r.runEvents.indexOf(event);
      expect(r.runEvents[at - 1]).toMatchObject({ type: 'tool.started' });
      expect(r.runEvents[at + 1]).toMatchObject({ type: 'step.finished' });
    }
    // Announced to the ledger's listeners as stored, in order.
    expect(r.heard.filter((e) => e.type === 'tool.finished' || e.type === 'step.finished')).toEqual(
      r.runEvents.filter((e) => e.type === 'tool.finished' || e.type === 'step.finished'),
    );
    // The session's log: tool.finished, the tool's message.created, then the step's completions.
    const rows = await loggedEvents(r.sql as SqlClient, r.session.id);
    const tools = r.messages.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(steps);
    for (const [i, tool] of tools.entries()) {
      expect(tool.parts).toEqual([expect.objectContaining({ type: 'tool-result', output: `echo: hi ${i}` })]);
      expect(tool.finished_at).not.toBeNull();
      const at = rows.findIndex(
        (row) => row.type === 'message.created' && String(row.payload).includes(tool.id),
      );
      expect(rows[at - 1]?.type).toBe('tool.finished');
      expect(rows.slice(at + 1, at + 3).map((row) => row.type)).toEqual([
        'message.completed',
        'message.completed',
      ]);
    }
  });
});
