/**
 * The SQLite transaction wrapper's own promises and its order (src/store/db.ts `atomicallyAsync`,
 * issue 17): one promise a transaction beyond its body's (an async function's chain was 7), none
 * for a body that joins an open one; bodies of one connection still one at a time, in call order,
 * a failed one (a rejection or a throw before its first await) rolled back and the next started.
 */
import { describe, expect, it } from 'vitest';
import { countPromises } from '../../test/helpers/promises';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { atomicallyAsync, type Db, enableGroupCommit, groupCommit, openDb } from './db';

enableGroupCommit();

const insert = (db: Db, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const ids = (db: Db) =>
  (db.prepare('SELECT id FROM sessions ORDER BY id').all() as { id: string }[]).map((r) => r.id);

/** The promises of 100 calls of `call`, a call (the test's own loop's await included). */
async function perCall(call: () => Promise<unknown>): Promise<number> {
  return (
    (await countPromises(async () => {
      for (let i = 0; i < 100; i++) await call();
    })) / 100
  );
}

describe('the SQLite transaction wrapper', () => {
  it('ENGINE-CPU-186: a transaction costs one promise beyond its body’s, a body joining an open one none', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    let n = 0;
    const body = async () => insert(db, `ses_${n++}`);
    const bare = await perCall(body);
    const own = await perCall(() => atomicallyAsync(() => db, body));
    const joined = await countPromises(() =>
      atomicallyAsync(
        () => db,
        () => perCall(() => atomicallyAsync(() => db, body)).then(() => undefined),
      ),
    );
    // One (the async wrapper: 6.94). The hook counts every promise of the process in that time,
    // so the bounds leave room for a few of other work's (a shared worker's timers).
    expect(own - bare).toBeLessThanOrEqual(1.5);
    // the outer body, its own transaction and the loop's 100 awaits of bodies: the joined ones add nothing
    expect(joined / 100 - bare).toBeLessThanOrEqual(0.5);
    expect(ids(db)).toHaveLength(n);
    db.close();
  });

  it('ENGINE-CPU-187: bodies of one connection run one at a time, in call order, each committed', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const order: string[] = [];
    let gate!: () => void;
    const opened = new Promise<void>((resolve) => {
      gate = resolve;
    });
    const first = atomicallyAsync(
      () => db,
      async () => {
        order.push('first start');
        insert(db, 'ses_a');
        await opened; // held open: the others wait for it
        order.push('first end');
      },
    );
    const later = ['b', 'c'].map((id) =>
      atomicallyAsync(
        () => db,
        async () => {
          order.push(`${id} start`);
          insert(db, `ses_${id}`);
        },
      ),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first start']);
    gate();
    await Promise.all([first, ...later]);
    expect(order).toEqual(['first start', 'first end', 'b start', 'c start']);
    expect(db.inTransaction).toBe(false);
    expect(ids(db)).toEqual(['ses_a', 'ses_b', 'ses_c']);
    db.close();
  });

  it('ENGINE-CPU-188: a body that throws before its first await is a rejection, rolled back, and the next body runs', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const throwing = (() => {
      insert(db, 'ses_lost');
      throw new Error('thrown at once');
    }) as unknown as () => Promise<void>;
    let call: Promise<void> | undefined;
    expect(() => {
      call = atomicallyAsync(() => db, throwing);
    }).not.toThrow();
    const next = atomicallyAsync(
      () => db,
      async () => insert(db, 'ses_kept'),
    );
    await expect(call).rejects.toThrow('thrown at once');
    await next;
    // a rejection after an await: rolled back as well
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          await null;
          insert(db, 'ses_lost_too');
          throw new Error('rejected');
        },
      ),
    ).rejects.toThrow('rejected');
    expect(db.inTransaction).toBe(false);
    expect(ids(db)).toEqual(['ses_kept']);
    db.close();
  });

  it('ENGINE-CPU-189: a body on a free connection starts in the caller’s stretch; inside the turn’s group commit it is a savepoint the batch waits for', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    groupCommit(db); // the turn's batch, committed at its microtask
    insert(db, 'ses_batch');
    let started = false;
    const body = atomicallyAsync(
      () => db,
      async () => {
        started = true;
        insert(db, 'ses_body');
        await new Promise((resolve) => setImmediate(resolve)); // past the batch's microtask
        expect(db.inTransaction).toBe(true); // the batch waited
        throw new Error('body failed');
      },
    );
    expect(started).toBe(true);
    await expect(body).rejects.toThrow('body failed');
    // the body's savepoint rolled back, the batch's row committed once the body ended
    expect(db.inTransaction).toBe(false);
    expect(ids(db)).toEqual(['ses_batch']);
    db.close();
  });
});
