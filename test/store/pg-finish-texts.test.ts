/**
 * A run's finish statement on PostgreSQL made once per shape (issue 18 item 6, p-pgappend): its
 * text depends on the UPDATE's columns, the queue read, the step end it carries (its
 * `PrecedingWrite.shape`, handed over or not), the compat row's write, the session events' call and
 * the riding insert, never on a value. No database: `updateRunWithEvent` against a client that
 * records what it is sent. Pins: a second finish of a shape makes no text and sends the same
 * string with its own values; that string is the one a write without a shape makes afresh; the
 * hand-over, another column, a call and a step end without a shape each their own.
 */
import { describe, expect, it } from 'vitest';
import { appendEventsCall } from '../../src/events/pg-event-store';
import { followingEvents } from '../../src/runs/pg-run-announced';
import { FOLLOWING_EVENTS } from '../../src/runs/pg-run-following-repository';
import { finishTextsBuilt, updateRunWithEvent } from '../../src/runs/pg-run-update-event-repository';
import type { SqlClient } from '../../src/store/postgres/client';
import type { PrecedingWrite } from '../../src/store/preceding-write';

const sent: { text: string; values: unknown[] }[] = [];
const sql = {
  one: async (text: string, values: unknown[]) => {
    sent.push({ text, values });
    return undefined;
  },
} as unknown as SqlClient;
const events = { known() {}, announce() {} };

/**
 * A step end as the step close makes it: its `WITH`s, then the run ledger's following write (read
 * when the text is built: handed over, its arrays only).
 */
function stepEnd(runId: string, shape: string | undefined, handing = true): PrecedingWrite<unknown> {
  const { write } = followingEvents(events)(runId, [
    { type: 'model.resolved', payload: { run: runId }, created_at: 1 },
    { type: 'phase', payload: { phase: 'model' }, created_at: 2 },
  ]);
  const go = (g: string) => `${g} AND EXISTS (SELECT 1 FROM p)`;
  return {
    values: [`msg_${runId}`, ...write.values],
    ready: 'EXISTS (SELECT 1 FROM messages WHERE id = $1)',
    ctes: (g) =>
      `p AS (UPDATE messages SET finished = true WHERE id = $1 AND ${g} RETURNING id), ${write.sql(1, go(g)).cte}`,
    last: FOLLOWING_EVENTS,
    answer: (g) => write.sql(1, go(g)).answer,
    read: () => undefined,
    ...(handing && write.handingOver ? { handingOver: write.handingOver } : {}),
    ...(shape === undefined ? {} : { shape }),
  };
}

/** The compat row's end (`GatedInsert.cte`): one function, as the compat repository's. */
const compatEnd = (offset: number, go: string) =>
  `alongside AS (UPDATE openai_compat_requests SET status = 'completed' WHERE request_id = $${offset + 1} AND ${go} RETURNING 1)`;

const finish = (
  runId: string,
  options: { shape?: string; handing?: boolean; cost?: boolean; call?: boolean } = {},
) =>
  updateRunWithEvent(
    sql,
    runId,
    { status: 'completed', finished_at: 5, ...(options.cost ? { cost: 0.5 } : {}) },
    5,
    { type: 'run.finished', payload: JSON.stringify({ run: runId }), created_at: 5 },
    `ses_${runId}`,
    {
      write: {
        values: [`req_${runId}`],
        cte: compatEnd,
      },
      event: { type: 'openai_compat.response', payload: '{}', created_at: 5 },
    },
    options.call === false
      ? undefined
      : (first) =>
          appendEventsCall(first, [
            { sessionId: `ses_${runId}`, type: 'run.finished', payload: '{}', createdAt: 5 },
          ]),
    {
      before: stepEnd(runId, 'shape' in options ? options.shape : 'unit-step', options.handing ?? true),
      event: { type: 'step.finished', payload: '{}', created_at: 4 },
    },
  );

describe('a run’s finish text on PostgreSQL, kept per shape', () => {
  it('STORE-PG-713: a shape’s text made once, sent again with each finish’s values; the text a write without a shape makes afresh; each part of the shape its own', async () => {
    const at = finishTextsBuilt();
    await finish('run_a');
    expect(finishTextsBuilt() - at).toBe(1);
    await finish('run_b');
    // No text made for the second: the first's string, with run_b's values.
    expect(finishTextsBuilt() - at).toBe(1);
    const [a, b] = sent.splice(0);
    expect(b?.text).toBe(a?.text);
    expect(b?.values).toContain('run_b');
    expect(b?.values).not.toContain('run_a');
    expect(b?.values).toHaveLength(a?.values.length ?? -1);
    // Handed over: the step end's arrays in the finish's list, no list call of its own (the finish's
    // own INSERT since p-lastseq, no list call at all).
    expect(a?.text.match(/INSERT INTO agent_run_events/g)).toHaveLength(1);
    expect(a?.text).not.toMatch(/svc_append_run_event_list\(/);
    expect(a?.text).toContain('::text[] AS types');

    // A step end without a shape: its text made every time, the same as the kept one.
    await finish('run_c', { shape: undefined });
    await finish('run_d', { shape: undefined });
    expect(finishTextsBuilt() - at).toBe(3);
    const [c, d] = sent.splice(0);
    expect(c?.text).toBe(a?.text);
    expect(d?.text).toBe(a?.text);

    // Not handed over, another column, no call: each a text of its own, made once.
    const others = [{ handing: false }, { cost: true }, { call: false }] as const;
    for (const [i, options] of others.entries()) {
      await finish(`run_e${i}`, options);
      await finish(`run_f${i}`, options);
      expect(finishTextsBuilt() - at).toBe(4 + 2 * i);
      const [e, f] = sent.splice(0);
      expect(f?.text).toBe(e?.text);
      expect(e?.text).not.toBe(a?.text);
      // The same text as made afresh (no shape).
      await finish(`run_g${i}`, { ...options, shape: undefined });
      expect(sent.splice(0)[0]?.text).toBe(e?.text);
    }
    expect(finishTextsBuilt() - at).toBe(9);
  });
});
