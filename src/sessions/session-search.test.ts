/**
 * Session search over the FTS5 index (issue 22 item 3). Pins: sessions are ranked by their best
 * message (bm25), title-only matches follow; a snippet (plain and highlighted) of the best
 * message; the session, role, tool and date filters; hostile queries never throw; messages
 * written, updated and deleted after the migration are (no longer) found; a database migrated from
 * before the index is backfilled.
 */
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { type Db, openDb } from '../store/db';
import { migrations } from '../store/migrations/index';
import { createSequentialIds } from '../util/ids';
import { createSessionSearch, ftsMatch, snippetOf } from './session-search';
import { createSessionSearchRepository } from './session-search-repository';
import { createSessionStore } from './session-store';
import type { MessagePart } from './types';

function storeOn(db: Db, start = 1_000) {
  let now = start;
  const clock = { now: () => now };
  const store = createSessionStore({ db: () => db, clock, ids: createSequentialIds(), workspace: '/w' });
  return { store, at: (ms: number) => (now = ms) };
}

const text = (t: string): MessagePart[] => [{ type: 'text', text: t }];
const toolRun = (tool: string, output: string): MessagePart[] => [
  { type: 'tool-result', tool_call_id: 'c1', tool, output },
];

async function seeded() {
  const db = openDb({ dataDir: tmpWorkspace() });
  const { store, at } = storeOn(db);
  const a = await store.create({ title: 'alpha' });
  const b = await store.create({ title: 'beta' });
  const c = await store.create({ title: 'about the kraken' });
  at(2_000);
  await store.appendMessage({ session_id: a.id, role: 'user', parts: text('the kraken appears once here') });
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
    parts: toolRun('bash', 'npm test: 3 failing specs'),
  });
  await store.appendMessage({
    session_id: a.id,
    role: 'assistant',
    parts: [{ type: 'tool-call', tool_call_id: 'c2', tool: 'read', input: { path: 'src/failing.ts' } }],
  });
  return { db, store, at, a, b, c };
}

describe('session search', () => {
  it('ranks sessions by their best message (bm25), then title-only matches', async () => {
    const { store, a, b, c } = await seeded();
    const found = await store.search('kraken');
    expect(found.map((r) => r.session.id)).toEqual([b.id, a.id, c.id]);
    expect(found[0]!.score!).toBeLessThan(found[1]!.score!);
    expect(found[2]).toMatchObject({ snippet: 'about the kraken' });
    expect(found[2]!.message_id).toBeUndefined();
    expect(await store.search('kraken', { limit: 1 })).toHaveLength(1);
  });

  it('gives a snippet of the best message, plain and highlighted, with its id, role and time', async () => {
    const { store, a } = await seeded();
    const [hit] = await store.search('APPEAR', { session_id: a.id });
    expect(hit).toMatchObject({
      snippet: 'the kraken appears once here',
      highlight: 'the kraken **appears** once here',
      role: 'user',
      matched_at: 2_000,
    });
    expect((await store.getMessage(hit!.message_id!))?.session_id).toBe(a.id);
  });

  it('filters by session, role, tool and date', async () => {
    const { store, a, b } = await seeded();
    const ids = (found: { session: { id: string } }[]) => found.map((r) => r.session.id);
    expect(ids(await store.search('kraken', { session_id: a.id }))).toEqual([a.id]);
    expect(ids(await store.search('kraken', { role: 'user' }))).toEqual([a.id]);
    expect(ids(await store.search('kraken', { role: 'system' }))).toEqual([]);
    expect(ids(await store.search('failing'))).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(ids(await store.search('failing', { tool: 'bash' }))).toEqual([b.id]);
    expect(ids(await store.search('failing', { tool: 'read' }))).toEqual([a.id]);
    expect(ids(await store.search('failing', { tool: 'bas' }))).toEqual([]);
    expect(ids(await store.search('kraken', { since: 2_500 }))).toEqual([b.id]);
    expect(ids(await store.search('kraken', { until: 2_500 }))).toEqual([a.id]);
    expect(ids(await store.search('kraken', { since: 2_000, until: 2_000 }))).toEqual([a.id]);
  });

  it('never throws on hostile queries', async () => {
    const { store, b } = await seeded();
    const hostile = [
      '"',
      '"kraken',
      'kraken"',
      '*',
      'kraken*',
      'NEAR',
      'NEAR(kraken story)',
      'kraken NEAR story',
      '-',
      '-kraken',
      'kraken -story',
      '(',
      'kraken)',
      '((kraken',
      'AND',
      'OR kraken',
      'NOT',
      'body:kraken',
      '^kraken',
      '{kraken}',
      "'; DROP TABLE messages; --",
      '%',
      '_',
      '\\',
      'カニ 🦑',
      'Ωμέγα',
      'naïve café',
      '\u0000',
    ];
    for (const query of hostile) await expect(store.search(query), query).resolves.toBeInstanceOf(Array);
    expect((await store.search('kraken)')).map((r) => r.session.id)[0]).toBe(b.id);
    expect((await store.search('(kraken story)')).map((r) => r.session.id)).toEqual([b.id]);
    expect(await store.search('NEAR(kraken story)')).toEqual([]);
    expect(await store.search('*')).toEqual([]);
  });

  it('matches non-ASCII text, case and accent insensitive', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const { store } = storeOn(db);
    const s = await store.create();
    await store.appendMessage({ session_id: s.id, role: 'user', parts: text('Ωμέγα Café naïve カニ') });
    for (const query of ['ωμέγα', 'cafe', 'NAIVE', 'カニ'])
      expect(
        (await store.search(query)).map((r) => r.session.id),
        query,
      ).toEqual([s.id]);
  });

  it('finds messages written, updated and deleted after the migration', async () => {
    const { store, a, b } = await seeded();
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
  });

  it('searches a database migrated from before the index existed (backfill)', async () => {
    const dataDir = tmpWorkspace();
    const before = migrations.filter((m) => m.id !== 3);
    const old = openDb({ dataDir, migrations: before });
    const { store: oldStore, at } = storeOn(old);
    const s = await oldStore.create({ title: 'old' });
    at(5_000);
    old
      .prepare(
        `INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)
           VALUES ('msg_old', ?, 'tool', ?, 5000, 5000), ('msg_bad', ?, 'user', 'not json', 5000, 5000)`,
      )
      .run(s.id, JSON.stringify(toolRun('grep', 'found the quokka')), s.id);
    old.close();
    const db = openDb({ dataDir });
    const { store } = storeOn(db);
    expect(await store.search('quokka', { tool: 'grep' })).toMatchObject([
      { session: { id: s.id }, message_id: 'msg_old', role: 'tool', matched_at: 5_000 },
    ]);
    const m = await store.appendMessage({ session_id: s.id, role: 'user', parts: text('another quokka') });
    expect((await store.search('quokka', { role: 'user' })).map((r) => r.message_id)).toEqual([m.id]);
  });

  it('ranks the newest matches of a common query first, widening until enough sessions', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const { store } = storeOn(db);
    const sessions: Awaited<ReturnType<typeof store.create>>[] = [];
    for (let i = 0; i < 4; i++) sessions.push(await store.create());
    for (const s of sessions)
      for (let i = 0; i < 3; i++)
        await store.appendMessage({ session_id: s.id, role: 'user', parts: text('walrus') });
    const search = createSessionSearch({
      repository: createSessionSearchRepository(() => db),
      get: store.get,
      firstWindow: 2,
    });
    // Window 2: the newest session only; limit 1 is satisfied by it.
    expect((await search('walrus', { limit: 1 })).map((r) => r.session.id)).toEqual([sessions[3]!.id]);
    // Limit 4 widens the window (2, 20) until every session is found.
    expect((await search('walrus', { limit: 4 })).map((r) => r.session.id).sort()).toEqual(
      sessions.map((s) => s.id).sort(),
    );
    expect(
      (await search('walrus', { limit: 4, session_id: sessions[1]!.id })).map((r) => r.session.id),
    ).toEqual([sessions[1]!.id]);
  });

  it('cuts a long snippet around the first match and highlights every matched token', () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`);
    words[30] = 'Kräken';
    words[33] = 'krakens';
    const { snippet, highlight } = snippetOf(words.join(' '), ['kraken']);
    expect(snippet).toBe(`…${words.slice(24, 48).join(' ')}…`);
    expect(highlight).toContain('**Kräken** w31 w32 **krakens**');
    expect(snippetOf('', ['x'])).toEqual({ snippet: '', highlight: '' });
  });

  it('redacts the whole text before cutting the snippet: a secret at the edge or split by `**` is not shown', () => {
    const redact = (text: string) => text.replaceAll(/\bghp_[A-Za-z0-9]{20,}/g, '[REDACTED]');
    const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`);
    words[5] = secret;
    words[11] = 'needle';
    const cut = snippetOf(words.join(' '), ['needle'], redact);
    expect(cut.snippet).toMatch(/^…REDACTED\] w6 /);
    const marked = snippetOf(`keep ${secret} safe`, ['ghp'], redact);
    expect(marked).toEqual({ snippet: 'keep [REDACTED] safe', highlight: 'keep [REDACTED] safe' });
    expect(JSON.stringify([cut, marked])).not.toContain('abcdefghijklmnop');
  });

  it('quotes every word of the query into a prefix phrase', () => {
    expect(ftsMatch('zebra')).toBe('"zebra"*');
    expect(ftsMatch('needle-42 "x" NEAR(')).toBe('"needle 42"* AND "x"* AND "NEAR"*');
    expect(ftsMatch('* - ( "')).toBeUndefined();
  });
});
