/**
 * A stop while a text step's first text is on its way to the database on PostgreSQL (issue 18
 * item 6, p-pgcompat7): a text step's held message is written once the read that brought its first
 * text is done (src/agent/step-recorder-core.ts `holdingText`); a delta that comes while that
 * statement is in flight waits for the message, and its event takes its place in the bus's queue
 * when it comes (`EventBus.reserve`), so a stop's `state.changed` after it follows it, as on
 * SQLite; that statement refused, the delta joins the text held again. The statement is slowed at
 * the database so that the second delta always comes while it is in flight, and the model's
 * finish waits for the cancel: whatever the load.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { reply } from '../helpers/fake-provider';
import { atTextDeltas } from '../helpers/held-step';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();
type Run = Awaited<ReturnType<typeof storeRun>>;
const allTypes = (r: Run) => r.sessionEvents.map((e) => e.type);

/** The assistant message's open INSERT (the held text's release) slowed 300 ms; `refused`: the first refused after it. */
async function slowRelease(sql: SqlClient, refused = false): Promise<void> {
  if (refused) await sql.run('CREATE SEQUENCE svc_test_once');
  await sql.run(`CREATE FUNCTION svc_test_slow_open() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF NEW.role = 'assistant' AND NEW.finished_at IS NULL THEN
        PERFORM pg_sleep(0.3);
        ${refused ? "IF nextval('svc_test_once') = 1 THEN RAISE EXCEPTION 'first text refused'; END IF;" : ''}
      END IF;
      RETURN NEW;
    END $fn$`);
  await sql.run(`CREATE TRIGGER svc_test_slow_open BEFORE INSERT ON messages FOR EACH ROW
    EXECUTE FUNCTION svc_test_slow_open()`);
}

describe.skipIf(!pg.available)('a text step’s first text while it is being written', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  /**
   * The text in two pieces 5 ms apart, cancelled at the second delta, the model's finish (chunk 3)
   * waiting for the cancel; on SQLite, then on PostgreSQL with `arm`'s faults. `atFirst`: done at
   * the first delta on both.
   */
  async function cancelAtSecondDelta(
    title: string,
    arm: (sql: SqlClient) => Promise<void>,
    atFirst?: (app: App, sessionId: string) => void,
  ): Promise<{ lite: Run; r: Run }> {
    let cancelled = (_done: Promise<unknown>) => {};
    const script = () => {
      const done = new Promise<unknown>((resolve) => {
        cancelled = resolve;
      });
      return [reply().text('one two three four five six seven').slow(5).pauseAt(3, done), reply().text('no')];
    };
    const spies: (() => void)[] = [];
    let armed: Promise<void> | undefined;
    const started = async (app: App, sessionId: string) => {
      await armed;
      spies.push(
        atTextDeltas({
          1: () => atFirst?.(app, sessionId),
          2: () => cancelled(app.agent.cancel(sessionId)),
        }),
      );
    };
    try {
      const lite = await storeRun(undefined, script(), { tools: [], title, closers, started });
      for (const restore of spies.splice(0)) restore();
      const client = (sql: SqlClient) => {
        armed = arm(sql);
        return sql;
      };
      const r = await storeRun(pg.cluster(), script(), { tools: [], title, closers, started, client });
      expect(lite.status).toBe('cancelled');
      expect(r.status).toBe('cancelled');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(allTypes(r)).toEqual(allTypes(lite));
      const ids = r.sessionEvents.map((e) => e.id);
      expect(ids).toEqual(ids.map((_, i) => (ids[0] ?? 0) + i));
      return { lite, r };
    } finally {
      for (const restore of spies.splice(0)) restore();
    }
  }

  it('STORE-PG-572: a cancel at the second delta, which comes while the first text’s statement is in flight: that delta’s event before the stop’s state.changed, the session log, run events and messages SQLite’s', async () => {
    const { r } = await cancelAtSecondDelta('cancel text', (sql) => slowRelease(sql));
    expect(allTypes(r).filter((t) => t === 'message.delta')).toHaveLength(2);
    const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
    expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
  });

  it('STORE-PG-905: the bus busy with another write when the first text’s release goes, a cancel at the second delta: the text’s message.created keeps its place before the stop’s state.changed, as on SQLite', async () => {
    // At the first delta, an event published whose write is slowed on PostgreSQL: the bus is busy
    // when the held text's release goes (the read's end), so its events cannot join its statement.
    const busy = (app: App, sessionId: string) =>
      app.bus.publish(sessionId, 'context.usage', {
        session_id: sessionId,
        input_tokens: 1,
        context_window: 100,
        ratio: 0.01,
        busy: true,
      });
    const { r } = await cancelAtSecondDelta(
      'cancel text busy',
      async (sql) => {
        await slowRelease(sql);
        await sql.run(`CREATE FUNCTION svc_test_slow_usage() RETURNS trigger LANGUAGE plpgsql AS $fn$
          BEGIN
            IF NEW.type = 'context.usage' AND NEW.payload LIKE '%"busy":true%' THEN PERFORM pg_sleep(0.2); END IF;
            RETURN NEW;
          END $fn$`);
        await sql.run(`CREATE TRIGGER svc_test_slow_usage BEFORE INSERT ON session_events FOR EACH ROW
          EXECUTE FUNCTION svc_test_slow_usage()`);
      },
      busy,
    );
    expect(allTypes(r).filter((t) => t === 'context.usage')).toHaveLength(1);
  });

  it('STORE-PG-573: that statement refused once while the second delta waits behind it: the text held again with both deltas and written by the step end; the run completes with the whole text, the session log, run events and messages SQLite’s', async () => {
    const script = () => [reply().text('one two three four five six seven').slow(5).usage(10, 7)];
    const lite = await storeRun(undefined, script(), { tools: [], title: 'refused text', closers });
    let armed: Promise<void> | undefined;
    const r = await storeRun(pg.cluster(), script(), {
      tools: [],
      title: 'refused text',
      closers,
      started: async () => {
        await armed;
      },
      client: (sql) => {
        armed = slowRelease(sql, true);
        return sql;
      },
    });
    expect(lite.status).toBe('completed');
    expect(r.status).toBe('completed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(allTypes(r)).toEqual(allTypes(lite));
    const [seq] = await (r.sql as SqlClient).query<{ is_called: boolean }>(
      'SELECT is_called FROM svc_test_once',
    );
    expect(seq?.is_called).toBe(true);
    const text = (m: Run['messages'][number]) => m.parts.map((p) => ('text' in p ? p.text : '')).join('');
    expect(r.messages.filter((m) => m.role === 'assistant').map(text)).toEqual([
      'one two three four five six seven',
    ]);
    const ids = r.sessionEvents.map((e) => e.id);
    expect(ids).toEqual(ids.map((_, i) => (ids[0] ?? 0) + i));
  });
});
