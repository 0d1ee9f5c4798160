/**
 * A message's `message.created` appended in the message's own statement on PostgreSQL (issue 18
 * item 6, p-pgstep3): `appendAnnounced` of the session store joins the bus's append
 * (`EventBus.join`) to the message's INSERT when the bus's write queue is idle. Pinned: one
 * statement for the two, the event delivered once with the log's id, in publish order with the
 * events before and after it, its NOTIFY sent; with the queue busy the event is published after
 * the message as before (order kept); a missing session writes neither and delivers nothing; a
 * tool step on a PostgreSQL App logs and delivers the session's events in the same order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/events/ring';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import {
  loggedEvents,
  migratedDatabase,
  noticesOn,
  postgresForFile,
  recordingClient,
} from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const JOINED = /INSERT INTO messages[\s\S]*svc_append_events_across/;
const ALONE = /^SELECT event_id, previous_id FROM svc_append_events_across/;

describe.skipIf(!pg.available)('message.created in the message statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function app(sent: string[]) {
    const sql = await migratedDatabase(pg.cluster());
    const made = await makeTestApp({ postgres: recordingClient(sql, sent) });
    closers.push(async () => {
      await made.close();
      await sql.close();
    });
    return { app: made, sql };
  }

  it('STORE-PG-190: an idle bus: the message and its event are one statement, delivered once with the log id, in order, notified', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    // Another connection's LISTEN, as another node's (src/events/pg-notify.ts).
    const notices = await noticesOn(sql.dedicated('svc-test-listen'), 'svc_events', closers);
    const session = await a.sessions.create({ title: 'joined' });
    await a.bus.flush();
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const appendAnnounced = a.sessions.appendAnnounced;
    expect(appendAnnounced).toBeTypeOf('function');

    // The bus idle: this node's own notice of the session's creation has come back and been taken.
    let message: { id: string } | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      await until(() => notices.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await a.bus.flush();
      sent.length = 0;
      seen.length = 0;
      message = await appendAnnounced?.(
        { session_id: session.id, role: 'assistant', parts: [{ type: 'text', text: 'hi' }], finished: false },
        'message.created',
        (id) => ({ session_id: session.id, message_id: id, role: 'assistant' }),
      );
      a.bus.publish(session.id, 'after', { n: attempt });
      await a.bus.flush();
      if (sent.some((text) => JOINED.test(text))) break;
    }

    // One statement for the message and its event; no append of its own.
    expect(sent.filter((text) => JOINED.test(text))).toHaveLength(1);
    expect(sent.filter((text) => ALONE.test(text))).toHaveLength(1); // `after`'s
    const rows = await loggedEvents(sql, session.id);
    const created = rows.filter((r) => r.type === 'message.created');
    expect(JSON.parse(created[created.length - 1].payload)).toEqual({
      session_id: session.id,
      message_id: message?.id,
      role: 'assistant',
    });
    // Delivered once, with the log's id, before the event published after it.
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-2).map((r) => [Number(r.id), r.type]));
    expect(seen.map((e) => e.type)).toEqual(['message.created', 'after']);
    expect(seen[0].payload).toEqual({ session_id: session.id, message_id: message?.id, role: 'assistant' });
    expect((await a.sessions.messages(session.id)).at(-1)).toMatchObject({ id: message?.id });
    await until(() => notices.includes(`${session.id}:${seen[0].id}`));
  });

  it('STORE-PG-191: a busy bus: the event is published after the message, in publish order', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const session = await a.sessions.create({ title: 'busy' });
    await a.bus.flush();
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    sent.length = 0;
    // Queued and not yet written: the message's event must come after it.
    a.bus.publish(session.id, 'before', { n: 0 });
    const message = await a.sessions.appendAnnounced?.(
      { session_id: session.id, role: 'tool', parts: [], finished: false },
      'message.created',
      (id) => ({ session_id: session.id, message_id: id, role: 'tool' }),
    );
    await a.bus.flush();
    expect(sent.filter((text) => JOINED.test(text))).toHaveLength(0);
    const rows = await loggedEvents(sql, session.id);
    expect(rows.slice(-2).map((r) => r.type)).toEqual(['before', 'message.created']);
    expect(JSON.parse(rows[rows.length - 1].payload).message_id).toBe(message?.id);
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-2).map((r) => [Number(r.id), r.type]));
  });

  it('STORE-PG-192: a missing session: not_found, no event logged or delivered, the bus goes on', async () => {
    const errors: unknown[] = [];
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    a.bus.subscribe('*', (event) => {
      if (event.type === 'message.created') errors.push(event);
    });
    await expect(
      a.sessions.appendAnnounced?.(
        { session_id: 'ses_missing', role: 'assistant', parts: [], finished: false },
        'message.created',
        (id) => ({ session_id: 'ses_missing', message_id: id }),
      ),
    ).rejects.toMatchObject({ code: 'not_found' });
    expect(sent.filter((text) => JOINED.test(text))).toHaveLength(1);
    const seen: SessionEvent[] = [];
    a.bus.subscribe('ses_missing', (event) => seen.push(event));
    a.bus.publish('ses_missing', 'later', {});
    await a.bus.flush();
    expect((await loggedEvents(sql, 'ses_missing')).map((r) => r.type)).toEqual(['later']);
    expect(seen.map((e) => e.type)).toEqual(['later']);
    expect(errors).toEqual([]);
  });

  it('STORE-PG-193: a tool step on a PostgreSQL App: the session events logged and delivered in the same order, message.created joined', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const { app: a } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }).usage(100, 20), reply().text('done').usage(130, 10)],
      { extraTools: [echoTool], postgres: recordingClient(sql, sent) },
    );
    closers.push(async () => {
      await a.close();
      await sql.close();
    });
    const session = await a.sessions.create({ title: 'step' });
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const { run_id } = await a.agent.send({ sessionId: session.id, prompt: 'go' });
    expect((await a.agent.wait(run_id)).status).toBe('completed');
    await a.bus.flush();
    const rows = await loggedEvents(sql, session.id);
    // Every logged event delivered once, in id order.
    expect(seen.map((e) => e.id)).toEqual(rows.slice(rows.length - seen.length).map((r) => Number(r.id)));
    const types = rows.map((r) => r.type);
    const started = types.indexOf('tool.started');
    expect(types.slice(started - 1, started + 6)).toEqual([
      'message.created',
      'tool.started',
      'tool.finished',
      'message.created',
      'message.completed',
      'message.completed',
      'context.usage',
    ]);
    const messages = await a.sessions.messages(session.id);
    const createdIds = rows
      .filter((r) => r.type === 'message.created')
      .map((r) => JSON.parse(r.payload).message_id);
    expect(createdIds).toEqual(messages.map((m) => m.id));
    // The step's assistant message (the first after an idle queue) carried its event.
    expect(sent.filter((text) => JOINED.test(text)).length).toBeGreaterThanOrEqual(1);
  });
});
