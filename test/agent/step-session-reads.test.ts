/**
 * What a step's preparation knows without reading (src/agent/run-stream.ts): the session's mode
 * and the run's cancel flag come back with the step end's own UPDATEs (`RETURNING *`), so the
 * next step neither reads the session row for the tool funnel nor the run row for the cancel
 * check. Pins, on SQLite and on PostgreSQL: a mode change by a tool of the run, a mode change
 * written by another process or node (another connection, no event of this process) and a cancel
 * requested by another node are all seen by the very next step.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/tools/core/define-tool';
import type { ToolContext } from '../../src/tools/core/types';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { type FakeProvider, type RecordedRequest, reply } from '../helpers/fake-provider';
import { postgresForFile, twoNodes } from '../helpers/postgres';

const pg = postgresForFile();
const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** A tool whose run is the test's hook: it acts while the step's tool call runs. */
function hookTool(hook: (ctx: ToolContext) => Promise<void>) {
  return defineTool({
    name: 'hook',
    family: 'test',
    tag: 'primitive',
    description: 'Test hook.',
    input: z.strictObject({}),
    mutates: false,
    run: async (ctx) => {
      await hook(ctx);
      return 'ok';
    },
  });
}

const tools = (request: RecordedRequest) =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
const toolNames = (provider: FakeProvider, i: number) => tools(provider.requests[i] as RecordedRequest);

/** A write of "another process" or "another node": SQL on its own connection, no event here. */
type OtherWrite = (text: string, params: unknown[]) => Promise<void>;

interface Backend {
  name: string;
  /** The App options and the other connection's write, with what closes them. */
  open(): Promise<{ options: object; other: (dataDir: string) => OtherWrite; close(): Promise<void> }>;
}

const sqlite: Backend = {
  name: 'SQLite',
  async open() {
    return {
      options: {},
      // Another process: it waits for this one's write lock (busy timeout) as a real one does.
      other: (dataDir) => async (text, params) => {
        const script = `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(join(dataDir, 'svc.db'))}, { timeout: 10000 });
db.prepare(${JSON.stringify(text.replace(/\$\d+/g, '?'))}).run(...${JSON.stringify(params)});`;
        await run(process.execPath, ['-e', script]);
      },
      close: async () => {},
    };
  },
};

const postgres: Backend = {
  name: 'PostgreSQL',
  async open() {
    const nodes = await twoNodes(pg.cluster());
    return {
      options: { postgres: nodes.sql },
      other: () => async (text, params) => {
        await nodes.other.run(text, params);
      },
      close: () => nodes.close(),
    };
  },
};

/** A step of mutating tools, then (after the hook's tool step) the next step's tool list. */
async function modeSeenByNextStep(backend: Backend, change: 'tool' | 'other') {
  const opened = await backend.open();
  let other: OtherWrite | undefined;
  // PostgreSQL: the next step's request goes out while the step end is in flight, with the tools of
  // the mode this node kept (p-pgpipe); the step end answers another node's mode, and that request
  // is aborted and made again (src/agent/step-ahead.ts `aheadHeld`), when it went out at all.
  const next = (request: RecordedRequest) =>
    tools(request).includes('write') ? reply().text('stale').hang(30_000) : reply().text('done');
  const script = [reply().toolCall('hook', {}), next, next];
  const { app, provider } = await agentApp(script, {
    ...opened.options,
    extraTools: [
      echoTool,
      hookTool(async (ctx) => {
        if (change === 'tool') await ctx.app.sessions.update(ctx.sessionId!, { mode: 'plan' });
        else await other!("UPDATE sessions SET mode = 'plan' WHERE id = $1", [ctx.sessionId]);
      }),
    ],
    extraConfig: { options: { tool_exposure: 'all' } },
  });
  other = opened.other(app.dataDir);
  try {
    const session = await app.sessions.create({ title: 'mode', mode: 'build' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
    expect((await app.agent.wait(run_id)).status).toBe('completed');
    // Build mode: the first step offers a mutating tool; plan mode withholds it at the next step.
    expect(toolNames(provider, 0)).toContain('write');
    const last = provider.requests.length - 1;
    expect(toolNames(provider, last)).not.toContain('write');
    expect(toolNames(provider, last)).toContain('echo');
    // SQLite, or a mode change the step end did not bring: one request a step.
    if (backend !== postgres || change === 'tool') expect(provider.requests).toHaveLength(2);
    else expect([2, 3]).toContain(provider.requests.length);
    // Nothing of the aborted request recorded.
    const texts = JSON.stringify(await app.sessions.messages(session.id));
    expect(texts).not.toContain('stale');
  } finally {
    await app.close();
    await opened.close();
  }
}

async function cancelSeenByNextStep(backend: Backend) {
  const opened = await backend.open();
  let other: OtherWrite | undefined;
  const { app, provider } = await agentApp(
    [reply().toolCall('hook', {}), reply().toolCall('hook', {}), reply().text('done')],
    {
      ...opened.options,
      allowExtra: true,
      extraTools: [
        hookTool(async (ctx) => {
          // requestCancel as another node makes it: the flag on the run's row, nothing else here.
          await other!('UPDATE agent_runs SET cancel_requested = 1 WHERE id = $1', [ctx.runId]);
        }),
      ],
    },
  );
  other = opened.other(app.dataDir);
  try {
    const session = await app.sessions.create({ title: 'cancel' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
    const result = await app.agent.wait(run_id);
    expect(result.status).toBe('cancelled');
    // The step after the cancel recorded nothing. SQLite: it never asked the model. PostgreSQL: its
    // request goes out while the step end is in flight and is aborted once that answers the flag
    // (p-pgpipe, src/agent/step-ahead.ts), or is not sent when it answered first.
    if (backend === postgres) expect([1, 2]).toContain(provider.requests.length);
    else expect(provider.requests.length).toBe(1);
    const events = await app.runs.events(run_id);
    expect(events.filter((e) => e.type === 'step.finished')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'phase' && e.payload.phase === 'model')).toHaveLength(1);
    expect((await app.sessions.messages(session.id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
    ]);
  } finally {
    await app.close();
    await opened.close();
  }
}

describe('the next step sees the session and the run as the step left them (SQLite)', () => {
  it('ENGINE-STEP-10: a mode change by a tool of the run is seen by the next step', async () => {
    await modeSeenByNextStep(sqlite, 'tool');
  });
  it('ENGINE-STEP-11: a mode change by another process is seen by the next step', async () => {
    await modeSeenByNextStep(sqlite, 'other');
  });
  it('ENGINE-STEP-12: a cancel requested by another process is seen by the next step', async () => {
    await cancelSeenByNextStep(sqlite);
  });
});

describe('the first step and the run preparation (SQLite)', () => {
  it('ENGINE-STEP-13: a mode change after the run preparation read the session is seen by the first step', async () => {
    const { app, provider } = await agentApp([reply().text('done')], {
      extraTools: [echoTool],
      extraConfig: { options: { tool_exposure: 'all' } },
    });
    // The prompt is assembled after the preparation's funnel read the session: change it there.
    let changed = false;
    app.agent.addPromptSection(async (sessionId) => {
      if (!changed) {
        changed = true;
        await app.sessions.update(sessionId, { mode: 'plan' });
      }
      return undefined;
    });
    const session = await app.sessions.create({ title: 'first step', mode: 'build' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
    expect((await app.agent.wait(run_id)).status).toBe('completed');
    expect(changed).toBe(true);
    expect(toolNames(provider, 0)).not.toContain('write');
    expect(toolNames(provider, 0)).toContain('echo');
  });
});

describe.skipIf(!pg.available)('the next step sees the session and the run (PostgreSQL)', () => {
  it('STORE-6: a mode change by a tool of the run is seen by the next step', async () => {
    await modeSeenByNextStep(postgres, 'tool');
  });
  it('STORE-7: a mode change by another node is seen by the next step', async () => {
    await modeSeenByNextStep(postgres, 'other');
  });
  it('STORE-8: a cancel requested by another node is seen by the next step', async () => {
    await cancelSeenByNextStep(postgres);
  });
});
