/**
 * The read models' contract (issue 18): the session event log's reads (`EventLogQueries`), a
 * session's conversation (`MessageQueries`) and the usage statistics (`UsageQueries`), run on
 * SQLite and PostgreSQL by ./event-log.contract.test.ts. Pins: log filters (types, session, session
 * list, since, after id), id order both ways, limits, empty lists match nothing, a payload that is
 * not a JSON object reads as {}; counts per type and the span; the conversation without tool or
 * system messages, malformed parts as none; usage totals, roles in order, models by messages then
 * name with tokens from the usage JSON.
 */
import { expect, it } from 'vitest';
import type { EventStore } from '../../../src/events/event-store';
import type { EventLogQueries } from '../../../src/events/log-queries';
import type { MessageQueries } from '../../../src/sessions/message-queries';
import type { UsageQueries } from '../../../src/sessions/usage-queries';
import { withOpened } from './fixture';

export interface ReadModels {
  log: EventLogQueries;
  events: EventStore;
  messages: MessageQueries;
  usage: UsageQueries;
  /** A raw statement with `?` parameters, to seed sessions and messages. */
  exec(statement: string, params: unknown[]): Promise<void>;
  close(): Promise<void>;
}

export function readModelsContract(open: () => Promise<ReadModels>): void {
  const withModels = withOpened(open, (f) => f);

  const session = (
    m: ReadModels,
    id: string,
    patch: { parent?: string; tokens?: [number, number]; cost?: number } = {},
  ) =>
    m.exec(
      'INSERT INTO sessions (id, parent_id, prompt_tokens, completion_tokens, cost, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [id, patch.parent ?? null, patch.tokens?.[0] ?? 0, patch.tokens?.[1] ?? 0, patch.cost ?? 0, 1, 1],
    );
  const message = (
    m: ReadModels,
    id: string,
    sessionId: string,
    role: string,
    patch: { parts?: string; model?: string; usage?: string; cost?: number } = {},
  ) =>
    m.exec(
      'INSERT INTO messages (id, session_id, role, parts, model, usage, cost, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [
        id,
        sessionId,
        role,
        patch.parts ?? '[]',
        patch.model ?? null,
        patch.usage ?? null,
        patch.cost ?? 0,
        1,
        1,
      ],
    );

  it(
    'STORE-PG-event-log: find filters, orders and limits; empty lists match nothing; bad payloads read as {}',
    withModels(async (m) => {
      const a1 = await m.events.insert('a', 'x', '{"n":1}', 100);
      const b1 = await m.events.insert('b', 'y', '{"n":2}', 200);
      const a2 = await m.events.insert('a', 'y', '[1,2]', 300);
      const c1 = await m.events.insert('c', 'x', 'not json', 400);
      const ids = async (filter: Parameters<EventLogQueries['find']>[0]) =>
        (await m.log.find(filter)).map((e) => e.id);
      expect(await ids({})).toEqual([a1, b1, a2, c1]);
      expect(await ids({ order: 'desc', limit: 2 })).toEqual([c1, a2]);
      expect(await ids({ types: ['x'] })).toEqual([a1, c1]);
      expect(await ids({ types: [] })).toEqual([]);
      expect(await ids({ sessionId: 'a' })).toEqual([a1, a2]);
      expect(await ids({ sessionIds: ['b', 'c'] })).toEqual([b1, c1]);
      expect(await ids({ sessionIds: [] })).toEqual([]);
      expect(await ids({ since: 200, afterId: b1 })).toEqual([a2, c1]);
      expect(await ids({ sessionId: 'a', types: ['y'], since: 0, limit: 5 })).toEqual([a2]);
      const events = await m.log.find({});
      expect(events[0]).toEqual({ id: a1, session_id: 'a', type: 'x', payload: { n: 1 }, created_at: 100 });
      expect(events[2].payload).toEqual({});
      expect(events[3].payload).toEqual({});
    }),
  );

  it(
    'STORE-PG-event-log: count, counts per type and the span of some types',
    withModels(async (m) => {
      await m.events.insert('a', 'x', '{}', 100);
      await m.events.insert('a', 'x', '{}', 150);
      await m.events.insert('b', 'x', '{}', 300);
      await m.events.insert('b', 'y', '{}', 500);
      expect(await m.log.count({ sessionId: 'a', type: 'x' })).toBe(2);
      expect(await m.log.count({ sessionId: 'a', type: 'y' })).toBe(0);
      const counts = await m.log.typeCounts(['x', 'y', 'z']);
      expect([...counts].sort((p, q) => p.type.localeCompare(q.type))).toEqual([
        { type: 'x', n: 3 },
        { type: 'y', n: 1 },
      ]);
      expect(await m.log.typeCounts([])).toEqual([]);
      expect(await m.log.span(['x'])).toEqual({ first_at: 100, last_at: 300, sessions: 2 });
      expect(await m.log.span(['z'])).toEqual({ first_at: null, last_at: null, sessions: 0 });
    }),
  );

  it(
    'STORE-PG-messages: a conversation is its user and assistant messages; malformed parts read as none',
    withModels(async (m) => {
      await session(m, 's1');
      await session(m, 's2');
      await message(m, 'm1', 's1', 'user', { parts: '[{"type":"text","text":"hi"}]' });
      await message(m, 'm2', 's1', 'assistant', { parts: 'oops' });
      await message(m, 'm3', 's1', 'tool', { parts: '[{"type":"tool-result"}]' });
      await message(m, 'm4', 's1', 'system');
      await message(m, 'm5', 's2', 'user');
      const got = (await m.messages.conversation('s1')).sort((p, q) => p.id.localeCompare(q.id));
      expect(got).toEqual([
        { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] },
        { id: 'm2', role: 'assistant', parts: [] },
      ]);
      expect(await m.messages.conversation('nope')).toEqual([]);
    }),
  );

  it(
    'STORE-PG-usage: totals of sessions, messages by role, usage per model',
    withModels(async (m) => {
      expect(await m.usage.sessionUsage()).toEqual({
        sessions: { total: 0, top: 0, tokens_in: 0, tokens_out: 0, cost: 0 },
        byRole: [],
        models: [],
      });
      await session(m, 's1', { tokens: [100, 20], cost: 0.5 });
      await session(m, 's2', { parent: 's1', tokens: [10, 2], cost: 0.25 });
      await message(m, 'm1', 's1', 'user');
      const usage = (i: number, o: number) => JSON.stringify({ input_tokens: i, output_tokens: o });
      await message(m, 'm2', 's1', 'assistant', { model: 'b-model', usage: usage(10, 1), cost: 0.1 });
      await message(m, 'm3', 's2', 'assistant', { model: 'b-model', usage: usage(20, 2), cost: 0.2 });
      await message(m, 'm4', 's2', 'assistant', { model: 'A-model', usage: usage(5, 5), cost: 0.5 });
      await message(m, 'm5', 's2', 'assistant', { model: 'c-model' });
      await message(m, 'm6', 's2', 'tool');
      expect(await m.usage.sessionUsage()).toEqual({
        sessions: { total: 2, top: 1, tokens_in: 110, tokens_out: 22, cost: 0.75 },
        byRole: [
          { role: 'assistant', n: 4 },
          { role: 'tool', n: 1 },
          { role: 'user', n: 1 },
        ],
        models: [
          {
            model: 'b-model',
            messages: 2,
            input_tokens: 30,
            output_tokens: 3,
            cost: expect.closeTo(0.3, 10),
          },
          { model: 'A-model', messages: 1, input_tokens: 5, output_tokens: 5, cost: 0.5 },
        ],
      });
    }),
  );
}
