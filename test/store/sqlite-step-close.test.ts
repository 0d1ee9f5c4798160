/**
 * A step's end on SQLite in one `closeStep` call (issue 17 item 2, p-stepcpu): the same statements,
 * in the same order, as the `updateMessage` calls and the `addUsage` call it replaces, and the
 * same rows; as with those calls, a missing message fails it after the other updates and the
 * usage are written.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSessionStore } from '../../src/sessions/session-store';
import type { MessagePatch, SessionStore } from '../../src/sessions/types';
import { atomicallyAsync, type Db } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { countPromises } from '../helpers/promises';
import { countStatements, openTestDb } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

function store(db: Db): SessionStore {
  return createSessionStore({ db: () => db, clock: systemClock, ids: createIds(), workspace: '/w' });
}

/** A session with a step's unfinished assistant call and its tool result. */
async function stepOf(sessions: SessionStore) {
  const session = await sessions.create({ title: 't' });
  const call = { type: 'tool-call' as const, tool_call_id: 'c1', tool: 'read', input: { path: 'a' } };
  const assistant = await sessions.appendMessage({
    session_id: session.id,
    role: 'assistant',
    parts: [call],
    finished: false,
  });
  const tool = await sessions.appendMessage({
    session_id: session.id,
    role: 'tool',
    parts: [{ type: 'tool-result', tool_call_id: 'c1', tool: 'read', output: 'x' }],
    finished: false,
  });
  const updates: { id: string; patch: MessagePatch }[] = [
    { id: assistant.id, patch: { usage: { input_tokens: 10, output_tokens: 2 }, cost: 0.5, finished: true } },
    { id: tool.id, patch: { finished: true } },
  ];
  return { session, updates };
}

const comparable = (
  rows: {
    id: string;
    session_id: string;
    created_at: number;
    updated_at: number;
    finished_at: number | null;
  }[],
) =>
  rows.map(({ id: _i, session_id: _s, created_at: _c, updated_at: _u, finished_at, ...rest }) => ({
    ...rest,
    finished: finished_at !== null,
  }));

describe('a step’s end on SQLite', () => {
  it('ENGINE-CPU-193: closeStep makes the statements and rows of updateMessage and addUsage, in one promise', async () => {
    const { db } = openTestDb(opened);
    const sessions = store(db);
    if (!sessions.closeStep) throw new Error('the SQLite session store has no closeStep');
    const usage = { input_tokens: 10, output_tokens: 2, cost: 0.5 };
    const apart = await stepOf(sessions);
    const joined = await stepOf(sessions);

    let counted = countStatements(db);
    for (const { id, patch } of apart.updates) await sessions.updateMessage(id, patch);
    const apartRow = await sessions.addUsage(apart.session.id, usage);
    const apartTexts = counted.texts;
    vi.restoreAllMocks();

    counted = countStatements(db);
    const joinedRow = await sessions.closeStep({
      sessionId: joined.session.id,
      messages: joined.updates,
      usage,
    });
    // The same statements, but the message UPDATEs ask for no row back (COMPAT-PERF-443).
    expect(counted.texts).toEqual(
      apartTexts.map((text) =>
        text.startsWith('UPDATE messages') ? text.replace(/ RETURNING \*$/, '') : text,
      ),
    );
    vi.restoreAllMocks();

    expect(comparable(await sessions.messages(joined.session.id))).toEqual(
      comparable(await sessions.messages(apart.session.id)),
    );
    expect(joinedRow).toMatchObject({ prompt_tokens: 10, completion_tokens: 2, cost: 0.5 });
    expect(joinedRow).toEqual(await sessions.get(joined.session.id));
    expect(apartRow).toMatchObject({ prompt_tokens: 10, completion_tokens: 2, cost: 0.5 });
    // One promise a call (and the caller's await): the separate calls made three and three awaits.
    const calls = 100;
    const made = await countPromises(async () => {
      for (let i = 0; i < calls; i++)
        await sessions.closeStep?.({ sessionId: joined.session.id, messages: joined.updates, usage });
    });
    expect(made / calls).toBeLessThanOrEqual(2.5);
    // Without usage: the messages alone, answered undefined.
    const bare = await stepOf(sessions);
    await expect(
      sessions.closeStep({ sessionId: bare.session.id, messages: bare.updates }),
    ).resolves.toBeUndefined();
    expect((await sessions.messages(bare.session.id)).every((m) => m.finished_at !== null)).toBe(true);
  });

  it('ENGINE-CPU-194: a missing message fails closeStep after the other updates and the usage, as the separate calls did', async () => {
    const { db } = openTestDb(opened);
    const sessions = store(db);
    if (!sessions.closeStep) throw new Error('the SQLite session store has no closeStep');
    const step = await stepOf(sessions);
    const [assistant, tool] = step.updates;
    if (!assistant || !tool) throw new Error('two updates');
    const messages = [assistant, { id: 'msg_none', patch: { finished: true } }, tool];
    await expect(
      sessions.closeStep({
        sessionId: step.session.id,
        messages,
        usage: { input_tokens: 4, output_tokens: 1, cost: 0 },
      }),
    ).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining('msg_none') });
    expect((await sessions.messages(step.session.id)).every((m) => m.finished_at !== null)).toBe(true);
    expect(await sessions.get(step.session.id)).toMatchObject({ prompt_tokens: 4, completion_tokens: 1 });
  });

  it("COMPAT-PERF-443: closeStep's message UPDATEs ask for no row back (no RETURNING *, `run`); the rows stored are updateMessage's", async () => {
    const { db } = openTestDb(opened);
    const sessions = store(db);
    if (!sessions.closeStep) throw new Error('the SQLite session store has no closeStep');
    const apart = await stepOf(sessions);
    const joined = await stepOf(sessions);
    for (const { id, patch } of apart.updates) await sessions.updateMessage(id, patch);

    const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<
      'get' | 'run',
      (...args: unknown[]) => unknown
    >;
    const methods: string[] = [];
    for (const method of ['run', 'get'] as const) {
      const original = proto[method];
      vi.spyOn(proto, method).mockImplementation(function (this: { source: string }, ...args: unknown[]) {
        if (/^\s*UPDATE messages/.test(this.source))
          methods.push(`${method} ${/RETURNING/.test(this.source) ? 'returning' : 'bare'}`);
        return original.apply(this, args);
      } as never);
    }
    await sessions.closeStep({ sessionId: joined.session.id, messages: joined.updates });
    vi.restoreAllMocks();
    expect(methods).toEqual(['run bare', 'run bare']);
    expect(comparable(await sessions.messages(joined.session.id))).toEqual(
      comparable(await sessions.messages(apart.session.id)),
    );
    // A parts patch too: stored as updateMessage stores it.
    const parts = [{ type: 'text' as const, text: 'done' }];
    await sessions.closeStep({
      sessionId: joined.session.id,
      messages: [{ id: joined.updates[1]!.id, patch: { parts } }],
    });
    expect((await sessions.getMessage(joined.updates[1]!.id))?.parts).toEqual(parts);
  });

  it('COMPAT-PERF-444: inside the transaction that wrote the message, closeStep leaves its read as the stored row', async () => {
    const { db } = openTestDb(opened);
    const sessions = store(db);
    const session = await sessions.create({ title: 't' });
    const usage = { input_tokens: 3, output_tokens: 1 };
    const [inside, stored] = await atomicallyAsync(
      () => db,
      async () => {
        const message = await sessions.appendMessage({
          session_id: session.id,
          role: 'assistant',
          parts: [{ type: 'text', text: 'a' }],
          finished: false,
        });
        await sessions.closeStep?.({
          sessionId: session.id,
          messages: [
            {
              id: message.id,
              patch: { parts: [{ type: 'text', text: 'ab' }], usage, cost: 0.25, finished: true },
            },
          ],
        });
        // Read in the transaction (the memo of the rows it wrote), then what the table holds.
        const read = await sessions.getMessage(message.id);
        const row = db.prepare('SELECT * FROM messages WHERE id = ?').get(message.id) as Record<
          string,
          unknown
        >;
        return [read, row] as const;
      },
    );
    expect(inside).toMatchObject({ parts: [{ type: 'text', text: 'ab' }], usage, cost: 0.25 });
    expect(inside?.finished_at).not.toBeNull();
    expect(inside).toEqual({
      ...stored,
      parts: JSON.parse(stored.parts as string),
      usage: JSON.parse(stored.usage as string),
    });
    expect(Object.keys(inside ?? {})).toEqual(Object.keys(stored));
  });
});
