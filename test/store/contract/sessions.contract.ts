/**
 * The SessionStore contract (issue 18): what every backend's session store answers, run on SQLite
 * and on PostgreSQL by ./sessions.contract.test.ts. Pins:
 * - create, get, require: defaults, metadata, ids from the id source, not_found naming the id;
 * - list: newest update first (id breaks ties), limit and offset, top-level or one parent's children;
 * - family (parents first) and root; delete removes the session, its children and their messages;
 * - update merges metadata and bumps updated_at; addUsage adds; count and messageCount;
 * - session.created, session.updated and session.deleted are published on the bus;
 * - messages: append returns what a read returns, write order within one millisecond, `after`
 *   and `limit`, a partial update keeps the other fields, finished, delete; unknown ids not_found;
 * - search: best message first then title-only sessions, snippet and highlight, the session,
 *   role, tool and date filters, prefix, case and accent folding, hostile queries never throw,
 *   updated and deleted messages (no longer) found.
 */
import { describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../../src/events/bus';
import type { AsyncOf } from '../../../src/sessions/async-of';
import type { MessagePart, SessionStore } from '../../../src/sessions/types';
import { type Clock, createSequentialIds, type Ids } from '../../../src/util/ids';

export type OpenSessionStore = (deps: { clock: Clock; ids: Ids; bus: EventBus }) => Promise<{
  store: AsyncOf<SessionStore>;
  close: () => Promise<void>;
}>;

const text = (t: string): MessagePart[] => [{ type: 'text', text: t }];

export function sessionStoreContract(open: OpenSessionStore): void {
  async function setup(start = 1_000) {
    let now = start;
    const clock = { now: () => now };
    const bus = createEventBus({ clock });
    const events: { session: string; type: string; payload: Record<string, unknown> }[] = [];
    bus.subscribe('*', (event) =>
      events.push({ session: event.session_id, type: event.type, payload: event.payload }),
    );
    const { store, close } = await open({ clock, ids: createSequentialIds(), bus });
    return { store, close, events, at: (ms: number) => (now = ms) };
  }
  /** Runs a case on a fresh store and closes it whatever happens. */
  const withStore =
    (fn: (s: Awaited<ReturnType<typeof setup>>) => Promise<void>, start?: number) => async () => {
      const s = await setup(start);
      try {
        await fn(s);
      } finally {
        await s.close();
      }
    };

  async function seeded(s: Awaited<ReturnType<typeof setup>>) {
    const { store, at } = s;
    const a = await store.create({ title: 'alpha' });
    const b = await store.create({ title: 'beta' });
    const c = await store.create({ title: 'about the kraken' });
    at(2_000);
    await store.appendMessage({
      session_id: a.id,
      role: 'user',
      parts: text('the kraken appears once here'),
    });
    at(3_000);
    await store.appendMessage({
      session_id: b.id,
      role: 'assistant',
      parts: text('kraken kraken kraken: the kraken is everywhere in this kraken story'),
    });
    at(4_000);
    await store.appendMessage({
      session_id: b.id,
      role: 'tool',
      parts: [{ type: 'tool-result', tool_call_id: 'c1', tool: 'bash', output: 'npm test: 3 failing specs' }],
    });
    await store.appendMessage({
      session_id: a.id,
      role: 'assistant',
      parts: [{ type: 'tool-call', tool_call_id: 'c2', tool: 'read', input: { path: 'src/failing.ts' } }],
    });
    return { a, b, c };
  }

  describe('sessions', () => {
    it(
      'STORE-PG-20b: create keeps an id reserved by the caller',
      withStore(async ({ store }) => {
        const s = await store.create({ id: 'ses_reserved', title: 'r' });
        expect(s.id).toBe('ses_reserved');
        expect((await store.require('ses_reserved')).title).toBe('r');
      }),
    );
    it(
      'STORE-PG-20: create, get and require',
      withStore(async ({ store }) => {
        const s = await store.create({ title: 't', metadata: { k: [1, 'x'] }, model: 'm/1' });
        expect(s).toEqual({
          id: 'ses_0001',
          parent_id: null,
          title: 't',
          mode: 'build',
          agent: 'build',
          model: 'm/1',
          reasoning_effort: null,
          workspace: '/w',
          prompt_tokens: 0,
          completion_tokens: 0,
          cost: 0,
          metadata: { k: [1, 'x'] },
          created_at: 1_000,
          updated_at: 1_000,
        });
        expect(await store.get(s.id)).toEqual(s);
        expect(await store.get('ses_none')).toBeUndefined();
        await expect(store.require('ses_none')).rejects.toMatchObject({
          code: 'not_found',
          message: 'session_id: no session "ses_none"; see svc session list',
        });
        await expect(store.create({ parent_id: 'ses_none' })).rejects.toMatchObject({ code: 'not_found' });
        expect(await store.count()).toBe(1);
      }),
    );

    it(
      'STORE-PG-21: list orders by last update (id breaks ties), pages, and filters by parent',
      withStore(async ({ store, at }) => {
        const a = await store.create();
        const b = await store.create();
        at(2_000);
        const child = await store.create({ parent_id: a.id });
        at(3_000);
        await store.update(a.id, { title: 'touched' });
        const ids = async (options?: Parameters<typeof store.list>[0]) =>
          (await store.list(options)).map((s) => s.id);
        expect(await ids()).toEqual([a.id, child.id, b.id]);
        expect(await ids({ limit: 1, offset: 1 })).toEqual([child.id]);
        expect(await ids({ parent_id: null })).toEqual([a.id, b.id]);
        expect(await ids({ parent_id: a.id })).toEqual([child.id]);
        expect(await ids({ parent_id: 'ses_none' })).toEqual([]);
      }),
    );

    it(
      'STORE-PG-22: family (parents first), root, and delete with children and messages',
      withStore(async ({ store, at }) => {
        const root = await store.create({ title: 'root' });
        at(1_001);
        const child = await store.create({ parent_id: root.id });
        const other = await store.create({ parent_id: root.id });
        at(1_002);
        const grandchild = await store.create({ parent_id: child.id });
        await store.appendMessage({ session_id: grandchild.id, role: 'user', parts: text('deep walrus') });
        const keep = await store.create();
        await store.appendMessage({ session_id: keep.id, role: 'user', parts: text('kept') });
        expect((await store.family(root.id)).map((s) => s.id)).toEqual([
          root.id,
          child.id,
          other.id,
          grandchild.id,
        ]);
        expect((await store.family(child.id)).map((s) => s.id)).toEqual([child.id, grandchild.id]);
        expect(await store.family('ses_none')).toEqual([]);
        expect(await store.root(grandchild.id)).toBe(root.id);
        expect(await store.root(root.id)).toBe(root.id);
        expect(await store.root('ses_none')).toBe('ses_none');
        expect(await store.delete(root.id)).toEqual([root.id, child.id, other.id, grandchild.id]);
        expect(await store.get(grandchild.id)).toBeUndefined();
        expect(await store.messageCount(grandchild.id)).toBe(0);
        expect(await store.search('walrus')).toEqual([]);
        expect(await store.count()).toBe(1);
        expect(await store.messageCount(keep.id)).toBe(1);
        await expect(store.delete(root.id)).rejects.toMatchObject({ code: 'not_found' });
      }),
    );

    it(
      'STORE-PG-23: update merges metadata and bumps updated_at; addUsage adds up',
      withStore(async ({ store, at }) => {
        const s = await store.create({ metadata: { a: 1 } });
        at(5_000);
        const u = await store.update(s.id, {
          title: 'new',
          model: null,
          reasoning_effort: 'high',
          metadata: { b: 2 },
        });
        expect(u).toMatchObject({
          title: 'new',
          model: null,
          reasoning_effort: 'high',
          metadata: { a: 1, b: 2 },
        });
        expect(u.updated_at).toBe(5_000);
        expect(u.created_at).toBe(1_000);
        await expect(store.update('ses_none', { title: 'x' })).rejects.toMatchObject({ code: 'not_found' });
        at(6_000);
        await store.addUsage(s.id, { input_tokens: 10, output_tokens: 5, cost: 0.25 });
        await store.addUsage(s.id, { input_tokens: 1, output_tokens: 2, cost: 0.5 });
        expect(await store.get(s.id)).toMatchObject({
          prompt_tokens: 11,
          completion_tokens: 7,
          cost: 0.75,
          updated_at: 6_000,
        });
      }),
    );
  });

  describe('events', () => {
    it(
      'STORE-PG-19: create, update and delete publish session events',
      withStore(async ({ store, events }) => {
        const parent = await store.create({ title: 'p' });
        const child = await store.create({ parent_id: parent.id, title: 'c' });
        await store.update(parent.id, { title: 'q', model: 'm' });
        await store.delete(parent.id);
        expect(events.map((e) => [e.session, e.type, e.payload])).toEqual([
          [parent.id, 'session.created', { session_id: parent.id, parent_id: null, title: 'p' }],
          [child.id, 'session.created', { session_id: child.id, parent_id: parent.id, title: 'c' }],
          [parent.id, 'session.updated', { session_id: parent.id, changed: ['title', 'model'] }],
          [parent.id, 'session.deleted', { session_id: parent.id }],
          [child.id, 'session.deleted', { session_id: child.id }],
        ]);
      }),
    );
  });

  describe('messages', () => {
    it(
      'STORE-PG-24: append returns what a read returns, in write order, and bumps the session',
      withStore(async ({ store, at }) => {
        const s = await store.create();
        at(2_000);
        const parts: MessagePart[] = [
          { type: 'text', text: 'hi', provider_metadata: { p: { sig: 'x' } } },
          { type: 'tool-call', tool_call_id: 'c', tool: 'read', input: { path: 'a' } },
        ];
        const m1 = await store.appendMessage({
          session_id: s.id,
          role: 'assistant',
          parts,
          model: 'm',
          provider: 'p',
          usage: { input_tokens: 3, output_tokens: 4 },
          cost: 0.125,
          run_id: 'run_1',
        });
        expect(m1).toEqual({
          id: 'msg_0001',
          session_id: s.id,
          role: 'assistant',
          parts,
          model: 'm',
          provider: 'p',
          usage: { input_tokens: 3, output_tokens: 4 },
          cost: 0.125,
          run_id: 'run_1',
          created_at: 2_000,
          updated_at: 2_000,
          finished_at: 2_000,
        });
        expect(m1.parts).not.toBe(parts);
        expect(await store.getMessage(m1.id)).toEqual(m1);
        const m2 = await store.appendMessage({
          session_id: s.id,
          role: 'user',
          parts: text('b'),
          finished: false,
        });
        const m3 = await store.appendMessage({ session_id: s.id, role: 'user', parts: text('c') });
        expect(m2).toMatchObject({ finished_at: null, model: null, usage: null, cost: 0, run_id: null });
        const ids = async (options?: { limit?: number; after?: string }) =>
          (await store.messages(s.id, options)).map((m) => m.id);
        expect(await ids()).toEqual([m1.id, m2.id, m3.id]);
        expect(await ids({ after: m1.id })).toEqual([m2.id, m3.id]);
        expect(await ids({ limit: 2 })).toEqual([m2.id, m3.id]);
        expect(await ids({ after: 'msg_none' })).toEqual([m1.id, m2.id, m3.id]);
        expect(await store.messageCount(s.id)).toBe(3);
        expect((await store.get(s.id))?.updated_at).toBe(2_000);
        await expect(
          store.appendMessage({ session_id: 'ses_none', role: 'user', parts: text('x') }),
        ).rejects.toMatchObject({
          code: 'not_found',
          message: 'session_id: no session "ses_none"; see svc session list',
        });
        expect(await store.messageCount('ses_none')).toBe(0);
      }),
    );

    it(
      'STORE-PG-25: a partial update keeps the other fields; delete; unknown ids are not_found',
      withStore(async ({ store, at }) => {
        const s = await store.create();
        const m = await store.appendMessage({
          session_id: s.id,
          role: 'assistant',
          parts: text('draft'),
          usage: { input_tokens: 1, output_tokens: 1 },
          cost: 0.5,
          finished: false,
        });
        at(2_000);
        const u1 = await store.updateMessage(m.id, { parts: text('final') });
        expect(u1).toMatchObject({
          parts: text('final'),
          usage: { input_tokens: 1, output_tokens: 1 },
          cost: 0.5,
        });
        expect(u1).toMatchObject({ updated_at: 2_000, finished_at: null, created_at: 1_000 });
        at(3_000);
        const u2 = await store.updateMessage(m.id, { usage: null, cost: 0, finished: true });
        expect(u2).toMatchObject({ parts: text('final'), usage: null, cost: 0, finished_at: 3_000 });
        expect(await store.getMessage(m.id)).toEqual(u2);
        await expect(store.updateMessage('msg_none', { cost: 1 })).rejects.toMatchObject({
          code: 'not_found',
          message: 'message_id: no message "msg_none"',
        });
        await store.deleteMessage(m.id);
        expect(await store.getMessage(m.id)).toBeUndefined();
        await expect(store.deleteMessage(m.id)).rejects.toMatchObject({
          code: 'not_found',
          message: `message_id: no message "${m.id}"`,
        });
      }),
    );
  });

  describe('search', () => {
    it(
      'STORE-PG-26: best message first, then title-only sessions; snippet and highlight',
      withStore(async (s) => {
        const { store } = s;
        const { a, b, c } = await seeded(s);
        const found = await store.search('kraken');
        expect(found.map((r) => r.session.id)).toEqual([b.id, a.id, c.id]);
        expect(found[0]!.score!).toBeLessThan(found[1]!.score!);
        expect(found[2]).toMatchObject({ snippet: 'about the kraken' });
        expect(found[2]!.message_id).toBeUndefined();
        expect(await store.search('kraken', { limit: 1 })).toHaveLength(1);
        const [hit] = await store.search('APPEAR', { session_id: a.id });
        expect(hit).toMatchObject({
          snippet: 'the kraken appears once here',
          highlight: 'the kraken **appears** once here',
          role: 'user',
          matched_at: 2_000,
          session: { id: a.id, title: 'alpha' },
        });
        expect((await store.getMessage(hit!.message_id!))?.session_id).toBe(a.id);
      }),
    );

    it(
      'STORE-PG-27: filters by session, role, tool and date',
      withStore(async (s) => {
        const { store } = s;
        const { a, b } = await seeded(s);
        const ids = async (query: string, options?: Parameters<typeof store.search>[1]) =>
          (await store.search(query, options)).map((r) => r.session.id);
        expect(await ids('kraken', { session_id: a.id })).toEqual([a.id]);
        expect(await ids('kraken', { role: 'user' })).toEqual([a.id]);
        expect(await ids('kraken', { role: 'system' })).toEqual([]);
        expect(await ids('failing')).toEqual(expect.arrayContaining([a.id, b.id]));
        expect(await ids('failing', { tool: 'bash' })).toEqual([b.id]);
        expect(await ids('failing', { tool: 'read' })).toEqual([a.id]);
        expect(await ids('failing', { tool: 'bas' })).toEqual([]);
        expect(await ids('kraken', { since: 2_500 })).toEqual([b.id]);
        expect(await ids('kraken', { until: 2_500 })).toEqual([a.id]);
        expect(await ids('kraken', { since: 2_000, until: 2_000 })).toEqual([a.id]);
      }),
    );

    it(
      'STORE-PG-28: prefixes, phrases, case and accents; hostile queries never throw',
      withStore(async (s) => {
        const { store } = s;
        const { b } = await seeded(s);
        const x = await store.create();
        await store.appendMessage({
          session_id: x.id,
          role: 'user',
          parts: text('Ωμέγα Café naïve カニ needle-42'),
        });
        for (const query of ['ωμέγα', 'cafe', 'NAIVE', 'カニ', 'needl', 'needle-42', '"needle 42"'])
          expect(
            (await store.search(query)).map((r) => r.session.id),
            query,
          ).toEqual([x.id]);
        expect(await store.search('42 needle', { role: 'assistant' })).toEqual([]);
        const hostile = [
          '"',
          '"kraken',
          '*',
          'kraken*',
          'NEAR(kraken story)',
          '-kraken',
          '((kraken',
          'OR kraken',
          'NOT',
          'body:kraken',
          '^kraken',
          '{kraken}',
          "'; DROP TABLE messages; --",
          '%',
          '_',
          '\\',
          '!kraken',
          'a & b | c',
          'x:*',
          '<->',
          '🦑',
          '\u0000',
        ];
        for (const query of hostile) await expect(store.search(query), query).resolves.toBeDefined();
        expect((await store.search('kraken)')).map((r) => r.session.id)[0]).toBe(b.id);
        expect((await store.search('(kraken story)')).map((r) => r.session.id)).toEqual([b.id]);
        expect(await store.search('*')).toEqual([]);
        expect(await store.search('%')).toEqual([]);
      }),
    );

    it(
      'STORE-PG-922: a blank or NUL query matches no title (it matched every title with a space, or every one); a query is trimmed for titles',
      withStore(async (s) => {
        const { store } = s;
        const { b, a, c } = await seeded(s);
        for (const query of [' ', '   ', '\u0000', ' \u0000 ', '\t'])
          expect(await store.search(query), JSON.stringify(query)).toEqual([]);
        expect((await store.search('  kraken  ')).map((r) => r.session.id)).toEqual([b.id, a.id, c.id]);
        expect((await store.search(' the kr')).map((r) => r.session.id)).toContain(c.id);
      }),
    );

    it(
      'STORE-PG-29: messages written, updated and deleted are (no longer) found',
      withStore(async (s) => {
        const { store } = s;
        const { a, b } = await seeded(s);
        expect(await store.search('leviathan')).toEqual([]);
        const m = await store.appendMessage({ session_id: a.id, role: 'assistant', parts: text('draft') });
        expect(await store.search('leviathan')).toEqual([]);
        await store.updateMessage(m.id, { parts: text('a leviathan rises') });
        expect((await store.search('leviathan')).map((r) => r.message_id)).toEqual([m.id]);
        await store.updateMessage(m.id, { finished: true });
        expect((await store.search('leviathan')).map((r) => r.message_id)).toEqual([m.id]);
        await store.deleteMessage(m.id);
        expect(await store.search('leviathan')).toEqual([]);
        await store.delete(b.id);
        expect(await store.search('kraken', { role: 'assistant' })).toEqual([]);
      }),
    );

    it(
      'a word past 2,046 bytes and a message past a 1 MB index are stored and found by their words',
      withStore(async (s) => {
        const { store } = s;
        const x = await store.create();
        const blob = 'Q'.repeat(2_100);
        const wide = '語'.repeat(700);
        const m = await store.appendMessage({
          session_id: x.id,
          role: 'user',
          parts: text(`x ${blob} ${wide} tail`),
        });
        const answer = await store.appendMessage({
          session_id: x.id,
          role: 'assistant',
          parts: text('draft'),
        });
        await store.updateMessage(answer.id, { parts: text(`zq ${'A'.repeat(3_000)}`), finished: true });
        const ids = async (query: string) => (await store.search(query)).map((r) => r.message_id);
        expect(await ids(blob)).toEqual([m.id]);
        expect(await ids(`x ${blob.slice(0, 40)}`)).toEqual([m.id]);
        expect(await ids(wide)).toEqual([m.id]);
        expect(await ids('tail')).toEqual([m.id]);
        expect(await ids(`zq ${'a'.repeat(3_000)}`)).toEqual([answer.id]);
        const many = Array.from(
          { length: 1_200 },
          (_, i) => `${String(i).padStart(4, '0')}${'w'.repeat(996)}`,
        );
        const big = await store.appendMessage({
          session_id: x.id,
          role: 'user',
          parts: text(`leviathan ${many.join(' ')}`),
        });
        expect((await store.getMessage(big.id))?.parts).toEqual(text(`leviathan ${many.join(' ')}`));
        expect(await ids('leviathan')).toEqual([big.id]);
        expect(await ids(many[0]!)).toEqual([big.id]);
      }),
    );
  });
}
