/**
 * A compat start with operating packs on, on PostgreSQL (p-packstart, p-ownctx Left 1). Pins:
 * - a lone start (a new session) stays one statement, its own commit: the run's preparation and
 *   first step read no operating pack (`SessionStart.inserted`: a pack's row references its
 *   session, and the session's row went in with the run's start statement, so no pack can be in
 *   force when the run starts); before, the run's funnel read the pack with the start's transaction
 *   open (BEGIN, the read, COMMIT after the lone statement); the hook dispatcher's reads (one per
 *   hook event, in its own context) are the request's only pack reads;
 * - the run gets the tools and the system prompt it gets on SQLite;
 * - a pack activated on another node on a session a lone start made applies to that session's next
 *   request, and its clearing too: nothing of the start's answer is kept;
 * - a pack activated while the lone start's run goes on applies from its next step (the start's
 *   answer serves its preparation and first step only).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import { defineTool } from '../../src/tools/core/define-tool';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { driverStatements, migratedDatabase, postgresForFile, twoNodes } from '../helpers/postgres';
import { ON, PREAMBLE_MARKER, packFiles } from '../packs/fixtures';
import { type CompatServer, compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const PACK_READ = /FROM session_operating_packs WHERE session_id/;
const PACKS_ON = { options: { operating_packs: true, openai_compat: {} } };
const NO_VIEW = `
name = "noview"
description = "no view"

[[policy]]
tool = "view"
effect = "deny"
reason = "not here"
`;
const files = () => packFiles({ '.svc/packs/noview/pack.toml': NO_VIEW });

/** The tool names and the system prompt (its workspace path masked) of the provider's request `at`. */
function modelRequest(server: CompatServer, at: number) {
  const body = server.provider.requests[at].body;
  const system = String(body.messages.find((m: { role: string }) => m.role === 'system')?.content ?? '');
  return {
    tools: ((body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name),
    system: system.split(server.app.workspace).join('<workspace>'),
  };
}

/** One streamed request bound to `sessionId`: the answer's text. */
async function boundAnswer(server: CompatServer, sessionId: string): Promise<string> {
  const stream = await server.client.chat.completions.create(
    { model: 'fake/m1', messages: [{ role: 'user', content: 'again' }], stream: true },
    { headers: { 'x-svc-session-id': sessionId } },
  );
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

async function settled(app: App) {
  const row = await settledCompatRow(app);
  await app.bus.flush();
  await app.packs?.hooksIdle();
  return row;
}

describe.skipIf(!pg.available)('a compat start with operating packs on, on PostgreSQL', () => {
  it('STORE-PG-480: packs on, a lone start is one statement with no BEGIN/COMMIT on its connection; the run’s preparation and first step read no pack (the hook dispatcher’s four reads are the request’s only ones)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const server = await compatServer([reply().text('warm'), reply().text('one')], {
      postgres: sql,
      compat: false,
      files: files(),
      extraConfig: PACKS_ON,
    });
    try {
      await streamedAnswer(server.client);
      await settled(server.app);
      const from = statements.calls.length;
      expect(await streamedAnswer(server.client)).toBe('one');
      await settled(server.app);
      const texts = statements.calls.slice(from).map((call) => call.text);
      const clients = statements.clients.slice(from);
      const start = texts.findIndex((text) => /INSERT INTO sessions /.test(text));
      expect(start).toBeGreaterThanOrEqual(0);
      // Its session events in it (p-pgstart4), inserted inline for its new session (p-pglone).
      expect(texts[start]).toContain('INSERT INTO session_events');
      // On the start's connection (and on any other) no BEGIN/COMMIT: the start's statement committed
      // by itself and nothing of the run joined its transaction.
      const own = texts.filter((_, i) => clients[i] === clients[start]);
      expect(own.filter((text) => text === 'BEGIN' || text === 'COMMIT')).toEqual([]);
      expect(texts.filter((text) => text === 'BEGIN' || text === 'COMMIT')).toEqual([]);
      // run.started, the prompt's and the answer's message.completed, run.finished: the dispatcher's
      // lookups (own context); the funnel of the preparation and of the first step and the prompt
      // section read none (were three more, the first in the start's transaction).
      expect(texts.filter((text) => PACK_READ.test(text))).toHaveLength(4);
    } finally {
      statements.restore();
      await server.app.close();
      await sql.close();
    }
  });

  it('STORE-PG-481: packs on, a lone start’s run gets the tools and the system prompt it gets on SQLite', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const options = { compat: false as const, files: files(), extraConfig: PACKS_ON };
    const onPostgres = await compatServer([reply().text('one')], { ...options, postgres: sql });
    const onSqlite = await compatServer([reply().text('one')], options);
    try {
      expect(await streamedAnswer(onPostgres.client)).toBe('one');
      expect(await streamedAnswer(onSqlite.client)).toBe('one');
      await settled(onPostgres.app);
      await settled(onSqlite.app);
      const postgres = modelRequest(onPostgres, 0);
      expect(postgres.tools.length).toBeGreaterThan(0);
      expect(postgres.system).not.toContain(PREAMBLE_MARKER);
      expect(postgres).toEqual(modelRequest(onSqlite, 0));
    } finally {
      await onPostgres.app.close();
      await onSqlite.app.close();
      await sql.close();
    }
  });

  it('STORE-PG-482: a pack activated on another node on the session a lone start made applies to its next request, its clearing too (nothing of the start’s answer kept)', async () => {
    const nodes = await twoNodes(pg.cluster());
    const server = await compatServer(
      [reply().text('one'), reply().text('two'), reply().text('three'), reply().text('four')],
      { postgres: nodes.sql, compat: false, files: files(), extraConfig: PACKS_ON },
    );
    const other = await makeTestApp({ postgres: nodes.other, files: files(), config: ON });
    try {
      expect(await streamedAnswer(server.client)).toBe('one');
      const { session_id: sessionId } = await settled(server.app);
      const before = modelRequest(server, 0);
      expect(before.system).not.toContain(PREAMBLE_MARKER);
      // Node B activates the review pack (its preamble) on the session node A's lone start made.
      await other.packs?.activate(sessionId, 'review');
      expect(await boundAnswer(server, sessionId)).toBe('two');
      await settled(server.app);
      expect(modelRequest(server, 1).system).toContain(PREAMBLE_MARKER);
      // Then a pack that denies `view`: the funnel of the run's preparation and first step.
      await other.packs?.activate(sessionId, 'noview');
      expect(await boundAnswer(server, sessionId)).toBe('three');
      await settled(server.app);
      const denied = modelRequest(server, 2);
      expect(denied.system).not.toContain(PREAMBLE_MARKER);
      expect(before.tools).toContain('view');
      expect(denied.tools).toEqual(before.tools.filter((name) => name !== 'view'));
      // Cleared on node B: the session's tools are the start's again.
      await other.packs?.clear(sessionId);
      expect(await boundAnswer(server, sessionId)).toBe('four');
      await settled(server.app);
      expect(modelRequest(server, 3).tools).toEqual(before.tools);
    } finally {
      await other.close();
      await server.app.close();
      await nodes.close();
    }
  });

  it('STORE-PG-483: a pack activated on another node during a lone start’s run applies from its next step (the start’s answer serves only its preparation and first step)', async () => {
    const nodes = await twoNodes(pg.cluster());
    const other = await makeTestApp({ postgres: nodes.other, files: files(), config: ON });
    const activateElsewhere = defineTool({
      name: 'activate_elsewhere',
      family: 'test',
      tag: 'primitive',
      description: 'Activate the noview pack on this session from another node.',
      input: z.strictObject({}),
      mutates: false,
      run: async (ctx) => {
        await other.packs?.activate(ctx.sessionId as string, 'noview');
        return 'activated';
      },
    });
    const server = await compatServer([reply().toolCall('activate_elsewhere', {}), reply().text('done')], {
      postgres: nodes.sql,
      compat: false,
      files: files(),
      extraConfig: PACKS_ON,
      extraTools: [activateElsewhere],
    });
    try {
      expect(await streamedAnswer(server.client)).toBe('done');
      await settled(server.app);
      expect(server.provider.requests).toHaveLength(2);
      const first = modelRequest(server, 0);
      const second = modelRequest(server, 1);
      expect(first.tools).toContain('view');
      // The tool it called travels in full from then on (deferred exposure); `view` is gone.
      expect(second.tools.filter((name) => name !== 'activate_elsewhere')).toEqual(
        first.tools.filter((name) => name !== 'view'),
      );
    } finally {
      await server.app.close();
      await other.close();
      await nodes.close();
    }
  });
});
