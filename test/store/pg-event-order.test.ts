/**
 * Cross-node event order (issue 18): two nodes (two pools) append to one session at once while a
 * reader follows the log the way an SSE reconnect does (the events after the last id it saw). With
 * the per-session append lock, ids are committed in id order within a session, so the reader ends
 * with every event exactly once; without it an event committed late with a smaller id is skipped.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { createPostgresClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('session event order across nodes', () => {
  it('STORE-PG-55: a reader following one session while two nodes append sees every event once, in id order', async () => {
    const url = await pg.cluster().createDatabase();
    const node = () =>
      createPostgresClient({ url, pool_size: 6, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });
    const [a, b, r] = [await node(), await node(), await node()];
    try {
      await migratePostgres(a);
      const stores = [createPostgresEventStore({ sql: a }), createPostgresEventStore({ sql: b })];
      const reader = createPostgresEventStore({ sql: r });
      const seen: number[] = [];
      let writing = true;
      const follow = (async () => {
        let last = 0;
        while (writing || (await reader.maxId('s1')) > last) {
          for (const row of await reader.after('s1', last)) {
            seen.push(row.id);
            last = row.id;
          }
        }
      })();
      // Each node appends 60 events, 6 at a time (its pool), with an unrelated session in between.
      await Promise.all(
        stores.map(async (store, n) => {
          for (let batch = 0; batch < 10; batch++) {
            await Promise.all(
              Array.from({ length: 6 }, (_, i) =>
                store.insert(i === 3 ? 'other' : 's1', 'tick', JSON.stringify({ n, batch, i }), Date.now()),
              ),
            );
          }
        }),
      );
      writing = false;
      await follow;
      const all = (await reader.after('s1', 0)).map((row) => row.id);
      expect(all).toHaveLength(2 * 10 * 5);
      expect(seen).toEqual(all);
    } finally {
      await Promise.all([a.close(), b.close(), r.close()]);
    }
  });
});
