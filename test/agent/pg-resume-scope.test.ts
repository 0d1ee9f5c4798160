/**
 * A resumed run's waits for an operator's answer are outside any read scope
 * (src/agent/run-loop.ts `prepareResumed`). An open scope keeps the process's promise hooks on
 * (src/store/async-scope.ts) and serves the rows it copied, blind to other nodes' writes ("a scope
 * is short", src/store/read-scope.ts). One App on PostgreSQL resumes a run its dead node left, with
 * `[engine] unknown_outcome = "ask"`; another connection plays the other node. DURABLE-61: the
 * session's model changed during the "run it again?" wait is the one the run uses. DURABLE-62:
 * during that wait the hooks are off, and the run's own read of its session after the answer sees
 * the other node's write. DURABLE-63: the same for a call that waits for its stored permission
 * request (`runWaitingCalls`).
 */
import { executionAsyncId } from 'node:async_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { agentApp, echoTool, touchTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { postgresForFile, twoNodes } from '../helpers/postgres';

const pg = postgresForFile();

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The async id a promise continuation runs under: 0 while no async hook tracks promises (Node 20, 22). */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

describe.skipIf(!pg.available)(
  'a resumed run waits for an answer outside the read scope (PostgreSQL)',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    const touched: string[] = [];

    /** An App on a fresh database holding a run its dead node left: running, its prompt stored, its echo call cut off. */
    async function cutOffRun(runId: string, call = { tool: 'echo', input: { text: 'again' } as object }) {
      const both = await twoNodes(pg.cluster());
      closers.push(() => both.close());
      const { app, provider } = await agentApp([reply().text('done')], {
        extraTools: [echoTool, touchTool(touched)],
        postgres: both.sql,
        extraConfig: {
          engine: { unknown_outcome: 'ask' },
          permissions: { unattended: 'wait' },
          models: { large: 'fake/m1', small: 'fake/m2' },
        },
      });
      closers.push(() => app.close());
      // The durable engine's part: an orphan is its to resume (here the test resumes it), not interrupted.
      app.runs.onOrphan?.(async () => true);
      const session = await app.sessions.create({ title: 'resumed' });
      const now = Date.now();
      await both.other.run(
        `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, steps, runner, pid, host, created_at, started_at, updated_at)
         VALUES ($1, $2, $2, 'running', 'build', 'api', 'go', 0, 'dead-node', 1, 'gone', $3, $3, $3)`,
        [runId, session.id, now],
      );
      await app.sessions.appendMessage({
        session_id: session.id,
        role: 'user',
        parts: [{ type: 'text', text: 'go' }],
        run_id: runId,
        finished: true,
      });
      await app.sessions.appendMessage({
        session_id: session.id,
        role: 'assistant',
        parts: [{ type: 'tool-call', tool_call_id: 'c1', ...call }],
        run_id: runId,
        finished: false,
      });
      /** Another node changes the session's model; this node has heard of it (its kept row follows the notifications). */
      const otherNodeSetsModel = async (model: string) => {
        await both.other.run('UPDATE sessions SET model = $1, updated_at = $2 WHERE id = $3', [
          model,
          Date.now(),
          session.id,
        ]);
        await until(
          async () => ((await app.sessions.get(session.id))?.model === model ? true : undefined),
          "the other node's write to be seen here",
        );
      };
      return { app, provider, session, otherNodeSetsModel, other: both.other };
    }

    it('DURABLE-61: the session row another node changed while the resumed run waited for "run it again?" is the one the run prepares with', async () => {
      const runId = 'run_resumed_61';
      const { app, provider, session, otherNodeSetsModel } = await cutOffRun(runId);
      const resumed = app.agent.resume(runId);
      const asked = await until(
        async () => (await app.permissions.listPending(session.id))[0],
        'the rerun question',
      );
      expect(asked.tool_call_id).toBe('rerun:c1');
      // Another node changes the session's model while the run waits for the answer.
      await otherNodeSetsModel('fake/m2');
      await app.permissions.answer(asked.request_id, 'allow_once');
      const outcome = await resumed;
      expect(outcome?.status).toBe('completed');
      // The call ran again and the model was asked with the session's model as the other node set it.
      expect(provider.requests).toHaveLength(1);
      expect(provider.requests[0]!.body.model).toBe('m2');
      const run = await app.runs.get(runId);
      expect(run?.model).toBe('fake/m2');
    }, 60_000);

    it('DURABLE-62: while a resumed run waits for "run it again?", no read scope is open: promise hooks are off, and the run reads the session row as another node left it', async () => {
      const runId = 'run_resumed_62';
      const { app, session, otherNodeSetsModel } = await cutOffRun(runId);
      // The run's own reads of its session around its wait (as a permission reader or a tool would make).
      const reads: (string | null)[] = [];
      const ask = app.permissions.ask.bind(app.permissions);
      app.permissions.ask = async (...args) => {
        reads.push((await app.sessions.require(session.id)).model);
        const answer = await ask(...args);
        reads.push((await app.sessions.require(session.id)).model);
        return answer;
      };
      const resumed = app.agent.resume(runId);
      const asked = await until(
        async () => (await app.permissions.listPending(session.id))[0],
        'the rerun question',
      );
      // Node 20 and 22 track promises with async hooks while any scope is open (src/store/async-scope.ts).
      expect(await continuationId()).toBe(0);
      await otherNodeSetsModel('fake/m2');
      await app.permissions.answer(asked.request_id, 'allow_once');
      expect((await resumed)?.status).toBe('completed');
      expect(reads).toEqual([null, 'fake/m2']);
    }, 60_000);

    it("DURABLE-63: while a resumed run's call waits for the permission it asked for before its node died, no read scope is open (promise hooks off); answered, the call runs", async () => {
      const runId = 'run_resumed_63';
      const { app, session, other } = await cutOffRun(runId, { tool: 'touch', input: { name: 'waited' } });
      // The dead node's question for the call, stored and unanswered.
      const now = Date.now();
      await other.run(
        `INSERT INTO permission_requests (request_id, session_id, root_session_id, run_id, tool_call_id, tool, title, created_at, expires_at)
         VALUES ('perm_63', $1, $1, $2, 'c1', 'touch', 'touch waited', $3, $4)`,
        [session.id, runId, now, now + 600_000],
      );
      const resumed = app.agent.resume(runId);
      await until(
        async () => (app.permissions.pending(session.id)[0]?.request_id === 'perm_63' ? true : undefined),
        'the wait',
      );
      expect(await continuationId()).toBe(0);
      await app.permissions.answer('perm_63', 'allow_once');
      expect((await resumed)?.status).toBe('completed');
      expect(touched).toEqual(['waited']);
    }, 60_000);
  },
);
