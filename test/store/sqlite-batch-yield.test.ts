/**
 * A step batch whose COMMIT yields one turn of the event loop (src/store/batch-yield.ts, asked
 * by a streamed compat request on SQLite, src/surfaces/http/compat/stream-answer.ts): at its check
 * phase it asks for the next one instead, once, so a check-phase callback queued after it runs
 * first and I/O already readable is read before it, its writes joining the batch. Committed at the
 * next check phase all the same (p-headfirst).
 */
import { createServer, type Server, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { yieldBatch } from '../../src/store/batch-yield';
import { type Db, enableGroupCommit, openDb, stepBatch } from '../../src/store/db';
import { tmpWorkspace } from '../helpers/tmp-workspace';

enableGroupCommit();

const opened: Db[] = [];
const closing: (() => void)[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  for (const close of closing.splice(0)) close();
});

function twoConnections() {
  const dataDir = tmpWorkspace();
  const db = openDb({ dataDir });
  const other = openDb({ dataDir });
  opened.push(db, other);
  return { db, other };
}
const insert = (db: Db, id: string) =>
  db.prepare('INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)').run(id, id);
const count = (db: Db) => (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
const checkPhase = () => new Promise((resolve) => setImmediate(resolve));

/** A connected loopback pair: `client` writes, `server` (its accepted socket) reads. */
async function socketPair(
  options: { pauseOnConnect?: boolean } = {},
): Promise<{ client: Socket; server: Socket }> {
  let accepted: (socket: Socket) => void = () => {};
  const got = new Promise<Socket>((resolve) => {
    accepted = resolve;
  });
  const listener: Server = createServer(options, (socket) => accepted(socket));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const client = new Socket();
  await new Promise<void>((resolve) =>
    client.connect((listener.address() as { port: number }).port, '127.0.0.1', resolve),
  );
  const server = await got;
  closing.push(() => {
    client.destroy();
    server.destroy();
    listener.close();
  });
  return { client, server };
}

describe('a step batch that yields its COMMIT one turn', () => {
  it('COMPAT-PERF-360: the check phase after the batch runs a later callback first; the COMMIT at the next check phase, once, with the writes between', async () => {
    const { db, other } = twoConnections();
    const order: string[] = [];
    insert(db, 'ses_none'); // outside a batch: committed on its own
    stepBatch(() => db);
    insert(db, 'ses_a');
    yieldBatch(() => db);
    setImmediate(() => order.push(`after: open ${db.inTransaction}`));
    await checkPhase();
    // The batch is still open after its first check phase; another yield does not push it further.
    expect(order).toEqual(['after: open true']);
    expect(db.inTransaction).toBe(true);
    yieldBatch(() => db);
    insert(db, 'ses_b');
    expect(count(other)).toBe(1);
    await checkPhase();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(3);
    // With no step batch open, nothing to yield: the next batch commits at its own check phase.
    yieldBatch(() => db);
    stepBatch(() => db);
    insert(db, 'ses_c');
    await checkPhase();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(4);
  });

  it('COMPAT-PERF-361: bytes already readable at the check phase are read before the yielded COMMIT; their writes join the batch', async () => {
    const { db, other } = twoConnections();
    // `answer`'s socket reads nothing until resumed: its bytes wait in the kernel, readable.
    const answer = await socketPair({ pauseOnConnect: true });
    const trigger = await socketPair();
    answer.client.write('answer');
    // Loopback delivery happens in the write; the margin is for a loaded box.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const order: string[] = [];
    const read = new Promise<void>((resolve) => {
      answer.server.on('data', () => {
        order.push(`read: open ${db.inTransaction}`);
        insert(db, 'ses_read');
        stepBatch(() => db); // the batch open: joined, no commit of its own
        resolve();
      });
    });
    // In an I/O callback (the poll phase, as a request's handler runs): this poll's events are
    // taken, so the answer is read at the next poll, after this turn's check phase, where an
    // unyielded batch commits.
    trigger.server.once('data', () => {
      stepBatch(() => db);
      insert(db, 'ses_a');
      yieldBatch(() => db);
      answer.server.resume();
    });
    trigger.client.write('go');
    await read;
    expect(order).toEqual(['read: open true']);
    await checkPhase();
    expect(db.inTransaction).toBe(false);
    expect(count(other)).toBe(2);
  });
});
