/**
 * A statement that commits by itself carrying the session events its transaction holds
 * (`EventBus.joinAll` with `own`, `SqlClient.aloneNow`; p-pgstart4: a lone compat start's
 * `session.created` and the six events after it) on a throwaway cluster. Pins: the held events go
 * first in the joined group, in publish order, with no append of the bus's own; a subscriber made
 * while they were held reads nothing from the log (its catch-up waits behind the group); another
 * node sees the same sequence; without `own`, while another transaction holds events of the
 * session, or once the transaction has sent a statement, the join is refused and the held events
 * are appended after the transaction as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { followOtherNodes } from '../../src/events/pg-notify';
import type { SqlClient } from '../../src/store/postgres/client';
import { busNode, type Closers } from '../helpers/pg-bus-node';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();
const APPEND = /svc_append_events_across/;
const READ = /FROM session_events/;

describe.skipIf(!pg.available)('session events held by a transaction, joined to its lone statement', () => {
  const closers: Closers = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const node = (url?: string) => busNode(pg.cluster(), closers, url);

  const logged = async (sql: SqlClient, sessionId: string) =>
    (
      await sql.query<{ type: string; payload: string }>(
        'SELECT type, payload FROM session_events WHERE session_id = $1 ORDER BY id',
        [sessionId],
      )
    ).map((r) => `${r.type} ${r.payload}`);

  it('STORE-PG-360: a lone statement carries the held session.created first and the joined events after it, no bus append; the subscriber made meanwhile reads nothing; another node sees the same sequence', async () => {
    const a = await node();
    const b = await node(a.url);
    const following = followOtherNodes(b.bus, b.sql);
    closers.push(() => following.stop());
    await following.started;
    const remote: string[] = [];
    b.bus.subscribe('ses_j', (event) => remote.push(`${event.type} ${JSON.stringify(event.payload)}`));
    await b.bus.lastId('ses_j');
    const local: { id: number; line: string }[] = [];
    let aloneBefore = false;
    let statements = 0;
    await a.sql.transaction(async () => {
      a.bus.publish('ses_j', 'session.created', { n: 0 });
      a.bus.subscribe('ses_j', (event) =>
        local.push({ id: event.id, line: `${event.type} ${JSON.stringify(event.payload)}` }),
      );
      aloneBefore = a.sql.aloneNow?.() ?? false;
      const joined = a.bus.joinAll?.(
        'ses_j',
        [
          { type: 'queue.changed', payload: { n: 1 } },
          { type: 'run.started', payload: { n: 2 } },
        ],
        { own: true },
      );
      expect(joined).toBeDefined();
      const call = joined!.call(2);
      const rows = await a.sql.alone!.query<{ event_id: string; previous_id: string }>(
        `WITH s AS (INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1) RETURNING id)
         SELECT event_id, previous_id FROM ${call.text} WHERE (SELECT count(*) FROM s) >= 0`,
        ['ses_j', ...call.values],
      );
      statements++;
      joined!.settle(rows.map((r) => ({ id: Number(r.event_id), previous: Number(r.previous_id) })));
    });
    await a.bus.flush();
    expect(aloneBefore).toBe(true);
    expect(statements).toBe(1);
    const sequence = ['session.created {"n":0}', 'queue.changed {"n":1}', 'run.started {"n":2}'];
    expect(await logged(a.sql, 'ses_j')).toEqual(sequence);
    // No append of the bus's own, and no catch-up read of the new session's log.
    expect(a.sent.filter((t) => APPEND.test(t) || READ.test(t))).toEqual([]);
    expect(local.map((e) => e.line)).toEqual(sequence);
    expect(local.map((e) => e.id)).toEqual([...local.map((e) => e.id)].sort((x, y) => x - y));
    await until(() => remote.length === sequence.length, 'the other node got every event');
    expect(remote).toEqual(sequence);
  });

  it('STORE-PG-361: the join is refused without `own`, while another transaction holds events of the session, and after the transaction sent a statement; the held events then append after it in publish order', async () => {
    const a = await node();
    // Without `own`: the held event refuses it, as before.
    await a.sql.transaction(async () => {
      a.bus.publish('ses_k', 'session.created', {});
      expect(a.bus.joinAll?.('ses_k', [{ type: 'queue.changed', payload: {} }])).toBeUndefined();
    });
    // Another transaction holds an event of the session: refused, nothing taken from either.
    let release!: () => void;
    const other = a.sql.transaction(async () => {
      a.bus.publish('ses_l', 'from the other', {});
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await until(() => release !== undefined, 'the other transaction holds its event');
    await a.sql.transaction(async () => {
      a.bus.publish('ses_l', 'session.created', {});
      expect(
        a.bus.joinAll?.('ses_l', [{ type: 'queue.changed', payload: {} }], { own: true }),
      ).toBeUndefined();
    });
    release();
    await other;
    // A statement sent first: the transaction's next one would not go alone.
    await a.sql.transaction(async (tx) => {
      a.bus.publish('ses_m', 'session.created', {});
      await tx.one('SELECT 1 AS one', []);
      expect(a.sql.aloneNow?.()).toBe(false);
      a.bus.publish('ses_m', 'queue.changed', {});
    });
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_k')).toEqual(['session.created {}']);
    expect(await logged(a.sql, 'ses_l')).toEqual(['session.created {}', 'from the other {}']);
    expect(await logged(a.sql, 'ses_m')).toEqual(['session.created {}', 'queue.changed {}']);
  });
});
