/**
 * A step's `phase` event in its assistant message's INSERT on PostgreSQL (issue 18 item 6,
 * p-pgstep6, src/agent/held-event.ts): held at the step's start, written by the message's
 * statement after the message (`RunLedger.followingEvent` passed to `appendAnnounced`), else by
 * whatever writes the run's next event first (a first step's goes with the preparation's held
 * writes instead, src/agent/held-writes.ts). Pinned: no statement of its own in a run's steps,
 * the same events in the same order at the step's start time, announced to the ledger's
 * listeners; the following write obeys the message (no session: neither written) and the run (no
 * run: the message alone); a step that fails before its first part still records its `phase`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/runs/types';
import type { agentApp } from '../helpers/agent-harness';
import { echoSteps, reply } from '../helpers/fake-provider';
import { pgAgentApp, recordedApp } from '../helpers/pg-recorded-app';
import { driverStatements, postgresForFile } from '../helpers/postgres';
import { sessionWithRun } from '../helpers/step-messages';

const pg = postgresForFile();

/** The run event appended in a statement of its own (`insertEvent`). */
const ALONE = /^SELECT event_id, event_seq FROM svc_append_run_event/;
/** A message INSERT carrying a run event. */
const MESSAGE_WITH_RUN_EVENT = /INSERT INTO messages[\s\S]*svc_append_run_event/;

describe.skipIf(!pg.available)('a step`s phase in its assistant message`s statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function runApp(script: Parameters<typeof agentApp>[0]) {
    const { app } = await pgAgentApp(pg.cluster(), script, closers);
    const heard: RunEvent[] = [];
    app.runs.onAppend((event) => heard.push(event));
    return { app, heard };
  }

  it('STORE-PG-270: a run`s steps write no `phase` statement; each step`s phase rides in its assistant INSERT, same order and times, announced (INSERTs with run events 8 → 9, p-pgride)', async () => {
    const steps = 4;
    const script = echoSteps(steps);
    const { app: a, heard } = await runApp(script);
    const session = await a.sessions.create({ title: 'phases' });
    const driver = driverStatements();
    let sent: string[];
    let runId: string;
    try {
      runId = (await a.agent.send({ sessionId: session.id, prompt: 'go' })).run_id;
      expect((await a.agent.wait(runId)).status).toBe('completed');
      sent = [...driver.sent];
    } finally {
      driver.restore();
    }
    // Without the hold: one `phase` statement a step (5). The first step's rides in the statement of
    // the preparation's held writes (src/agent/held-writes.ts), the others in their assistant INSERTs.
    // Each step's tool message INSERT carries its call's `tool.finished` (p-pgstep7,
    // ./pg-tool-finished.test.ts): `steps` more. The first step's assistant INSERT carries its
    // tool's `tool.started` (p-pgride): one more.
    expect(sent.filter((text) => ALONE.test(text))).toEqual([]);
    expect(sent.filter((text) => MESSAGE_WITH_RUN_EVENT.test(text))).toHaveLength(2 * steps + 1);

    const events = await a.runs.events(runId);
    const types = events.map((e) => e.type);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const phases = events.filter((e) => e.type === 'phase' && e.payload.phase === 'model');
    expect(phases.map((e) => e.payload.step)).toEqual([1, 2, 3, 4, 5]);
    // Each step: its phase, then its tool's start (the last: its end).
    for (const phase of phases) {
      const next = types[events.indexOf(phase) + 1];
      expect(next).toBe(phase.payload.step === steps + 1 ? 'step.finished' : 'tool.started');
    }
    // At the step's start: before its assistant message was written.
    const assistants = (await a.sessions.messages(session.id)).filter((m) => m.role === 'assistant');
    expect(assistants).toHaveLength(steps + 1);
    for (const [i, phase] of phases.entries())
      expect(phase.created_at).toBeLessThanOrEqual(assistants[i].created_at);
    // Announced to the ledger's listeners as any append, with the stored ids and seqs.
    const heardPhases = heard.filter((e) => e.type === 'phase' && e.payload.phase === 'model');
    expect(heardPhases).toEqual(phases);
  });

  it('STORE-PG-271: a message INSERT with a following run event: one statement; no run: the message alone; no session: neither', async () => {
    const sent: string[] = [];
    const { app: a } = await recordedApp(pg.cluster(), sent, closers);
    const heard: RunEvent[] = [];
    a.runs.onAppend((event) => heard.push(event));
    const { session, run } = await sessionWithRun(a, 'following');
    const follow = a.runs.followingEvent;
    const appendAnnounced = a.sessions.appendAnnounced;
    if (!follow || !appendAnnounced) throw new Error('no followingEvent / appendAnnounced on PostgreSQL');
    const input = (sessionId: string) => ({
      session_id: sessionId,
      role: 'assistant' as const,
      parts: [{ type: 'text' as const, text: 'hi' }],
      run_id: run.id,
      finished: false,
    });
    const payload = (id: string) => ({ session_id: session.id, message_id: id, role: 'assistant' });

    const before = await a.runs.events(run.id);
    const at = Date.now() - 5_000;
    const following = follow(run.id, 'phase', { phase: 'model', step: 1 }, at);
    await a.bus.flush();
    sent.length = 0;
    const message = await appendAnnounced(input(session.id), 'message.created', payload, following.write);
    expect(sent.filter((text) => /INSERT INTO messages/.test(text))).toHaveLength(1);
    expect(sent.filter((text) => ALONE.test(text))).toEqual([]);
    const written = following.written();
    const after = await a.runs.events(run.id);
    expect(after).toHaveLength(before.length + 1);
    expect(written).toEqual(after.at(-1));
    expect(written).toMatchObject({
      run_id: run.id,
      session_id: session.id,
      type: 'phase',
      payload: { phase: 'model', step: 1 },
      seq: (before.at(-1)?.seq ?? 0) + 1,
      created_at: at,
    });
    expect(heard.at(-1)).toEqual(written);
    expect((await a.sessions.messages(session.id)).map((m) => m.id)).toContain(message.id);

    // No such run: the message is written, the event not.
    const missing = follow('run_missing', 'phase', { phase: 'model', step: 1 }, at);
    const alone = await appendAnnounced(input(session.id), 'message.created', payload, missing.write);
    expect(missing.written()).toBeUndefined();
    expect((await a.sessions.messages(session.id)).map((m) => m.id)).toContain(alone.id);
    expect(await a.runs.events(run.id)).toHaveLength(after.length);

    // No such session: neither.
    const orphan = follow(run.id, 'phase', { phase: 'model', step: 2 }, at);
    await expect(
      appendAnnounced(input('ses_missing'), 'message.created', payload, orphan.write),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect(orphan.written()).toBeUndefined();
    expect(await a.runs.events(run.id)).toHaveLength(after.length);
  });

  it('STORE-PG-272: text then a call rides too; a step that fails before its first part still records its phase, before its error (INSERTs with run events 3 → 4, p-pgride)', async () => {
    const { app: a } = await runApp([
      reply().toolCall('echo', { text: 'first' }).usage(100, 20),
      reply().text('let me look').toolCall('echo', { text: 'hi' }).usage(100, 20),
      reply().streamError('the provider broke'),
    ]);
    const session = await a.sessions.create({ title: 'broken' });
    const driver = driverStatements();
    let sent: string[];
    let runId: string;
    try {
      runId = (await a.agent.send({ sessionId: session.id, prompt: 'go' })).run_id;
      expect((await a.agent.wait(runId)).status).toBe('failed');
      sent = [...driver.sent];
    } finally {
      driver.restore();
    }
    // The first step's phase with the preparation's writes, the second's in its INSERT (from its
    // first text delta), the third's alone; the two tool messages' INSERTs carry their calls'
    // `tool.finished` (p-pgstep7); the first step's assistant INSERT (a call first) its tool's
    // `tool.started` (p-pgride).
    expect(sent.filter((text) => MESSAGE_WITH_RUN_EVENT.test(text))).toHaveLength(4);
    expect(sent.filter((text) => ALONE.test(text)).length).toBeGreaterThanOrEqual(1);
    const events = await a.runs.events(runId);
    const types = events.map((e) => e.type);
    const phases = events.filter((e) => e.type === 'phase' && e.payload.phase === 'model');
    expect(phases.map((e) => e.payload.step)).toEqual([1, 2, 3]);
    expect(types[events.indexOf(phases[0]) + 1]).toBe('tool.started');
    expect(types[events.indexOf(phases[1]) + 1]).toBe('tool.started');
    const error = events.find((e) => e.type === 'error');
    expect(error).toBeDefined();
    expect(events.indexOf(phases[2])).toBeLessThan(events.indexOf(error as RunEvent));
    expect(phases[2].created_at).toBeLessThanOrEqual((error as RunEvent).created_at);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
