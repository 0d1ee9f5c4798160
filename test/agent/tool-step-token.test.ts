/**
 * A tool step's SQLite transaction bodies with their token (`togetherWith`, p-txcheck): the tool's
 * start, its call and result messages, no `AsyncLocalStorage` scope each (src/store/async-scope.ts:
 * a scope turns Node 20's promise hooks on while it is open). Counted over whole runs of echo
 * tool steps (a run of many steps − one of few), with the missed-token check's own scopes off.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { setTxCheck } from '../../src/store/tx-check';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

/** The scopes entered by one run of `steps` echo tool steps and a closing answer, and its rows. */
async function scopesOfRun(steps: number): Promise<{ scopes: number; messages: number; status: string }> {
  const script = [
    ...Array.from({ length: steps }, (_, i) => reply().toolCall('echo', { text: `step ${i}` })),
    reply().text('done'),
  ];
  const { app } = await agentApp(script, { extraTools: [echoTool] });
  const proto = AsyncLocalStorage.prototype;
  const run = proto.run;
  let scopes = 0;
  const checkWas = setTxCheck(false);
  proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
    scopes++;
    return run.apply(this, args) as ReturnType<typeof run>;
  } as typeof run;
  try {
    const result = await app.agent.run({ prompt: 'go', maxSteps: steps + 2, yolo: true });
    const messages = (app.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;
    return { scopes, messages, status: result.status };
  } finally {
    proto.run = run;
    setTxCheck(checkWas);
    await app.close();
  }
}

describe('a tool step’s transaction bodies with their token (SQLite)', () => {
  it('COMPAT-PERF-294: a tool step enters no AsyncLocalStorage scope for its start, call and result writes; its messages as before', async () => {
    await scopesOfRun(1); // the modules and the statements of a run prepared once
    const few = await scopesOfRun(2);
    const many = await scopesOfRun(12);
    expect(few.status).toBe('completed');
    expect(many.status).toBe('completed');
    // A step: the call's message and its result's (the user prompt and the closing answer once).
    expect((many.messages - few.messages) / 10).toBe(2);
    // 5 on 9918caa (the tool’s start, its call’s message, its result’s, each in its scope).
    expect((many.scopes - few.scopes) / 10).toBe(0);
  });

  it('COMPAT-PERF-295: a whole run sent through the API (`agent.run`, as `svc run`) enters no AsyncLocalStorage scope: its send and its model’s resolution with their token', async () => {
    await scopesOfRun(1);
    const run = await scopesOfRun(2);
    expect(run.status).toBe('completed');
    // The user prompt, two calls and their results, the closing answer.
    expect(run.messages).toBe(6);
    // 12 on 9918caa: the send's body and its run's model resolution, and 5 a tool step.
    expect(run.scopes).toBe(0);
  });
});
