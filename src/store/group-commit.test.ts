import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import {
  atomically,
  atomicallyAsync,
  commitBatch,
  enableGroupCommit,
  groupCommit,
  openDb,
  stepBatch,
} from './db';

enableGroupCommit();

const insert = (db: ReturnType<typeof openDb>, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const count = (db: ReturnType<typeof openDb>) =>
  (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit', () => {
  it('the writes of one synchronous stretch are one transaction, committed right after it', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    groupCommit(db);
    insert(db, 'ses_a');
    atomically(
      () => db,
      () => insert(db, 'ses_b'),
    ); // a savepoint inside the turn's transaction
    groupCommit(db); // already open: joins it
    expect(db.inTransaction).toBe(true);
    expect(count(db)).toBe(2); // this connection sees its rows at once
    expect(count(other)).toBe(0); // another connection (process) once the stretch ends
    await nextTurn();
    await nextTurn();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(2);
    other.close();
    db.close();
  });

  it('an async body inside a batch joins it: the batch commits once, after the body, even past its turn', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const other = openDb({ dataDir });
    stepBatch(() => db);
    insert(db, 'ses_a');
    const body = atomicallyAsync(
      () => db,
      async () => {
        insert(db, 'ses_b');
        await nextTurn(); // the batch's scheduled commit comes and goes while the body is open
        expect(db.inTransaction).toBe(true);
        expect(count(other)).toBe(0);
        insert(db, 'ses_c');
      },
    );
    await body;
    expect(db.inTransaction).toBe(false); // committed when the body ended
    expect(count(other)).toBe(3);
    // A failing body inside a batch rolls back only its own writes.
    stepBatch(() => db);
    insert(db, 'ses_d');
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          insert(db, 'ses_e');
          throw new Error('no');
        },
      ),
    ).rejects.toThrow('no');
    await nextTurn();
    expect(count(other)).toBe(4);
    other.close();
    db.close();
  });

  it('closing the database commits the open batch; commitBatch without one is a no-op', () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    commitBatch(db);
    groupCommit(db);
    insert(db, 'ses_c');
    db.close();
    const reopened = openDb({ dataDir });
    expect(count(reopened)).toBe(1);
    reopened.close();
  });

  it('a failed savepoint inside the batch rolls back only its own writes', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    groupCommit(db);
    insert(db, 'ses_d');
    expect(() =>
      atomically(
        () => db,
        () => {
          insert(db, 'ses_e');
          insert(db, 'ses_d'); // duplicate key
        },
      ),
    ).toThrow();
    await nextTurn();
    await nextTurn();
    const ids = (db.prepare('SELECT id FROM sessions ORDER BY id').all() as { id: string }[]).map(
      (r) => r.id,
    );
    expect(ids).toEqual(['ses_d']);
    db.close();
  });
});
