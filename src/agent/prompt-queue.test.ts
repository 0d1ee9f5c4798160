import { describe, expect, it } from 'vitest';
import type { AgentRun } from '../runs/run-ledger';
import type { Session } from '../sessions/session-store';
import type { AgentDeps, AgentHost } from './deps';
import { sendNow } from './prompt-queue';
import { createAgentCore } from './session-runtime';

/**
 * A core whose ledger inserts the run claimed (`createClaimed`, its statement `alone` or part of a
 * transaction with BEGIN) and whose prompt, riding in that statement, fails once written: the send
 * fails after the statement, before the run is launched.
 */
function failingStart(alone: boolean) {
  const session = { id: 'ses_1', parent_id: null, agent: 'build', model: null, title: 't' } as Session;
  const run = {
    id: 'run_1',
    session_id: 'ses_1',
    parent_run_id: null,
    family_session_id: 'ses_1',
    status: 'running',
    agent: 'build',
    model: null,
    origin: 'api',
    prompt: 'hi',
  } as AgentRun;
  const host = {
    config: { agents: {}, models: {} },
    bus: { publish: () => {} },
    runs: {
      createClaimed: async (
        _input: unknown,
        _riding: unknown,
        claim: { trailing?: (runId: string) => unknown },
      ) => {
        claim.trailing?.(run.id);
        return { ok: true, run, started: {}, next: {}, alone };
      },
    },
    sessions: {
      promptInsert: () => ({
        message: { id: 'msg_1', created_at: 1 },
        inserts: [],
        written: () => {
          throw new Error('injected fault');
        },
      }),
    },
  } as unknown as AgentHost;
  const core = createAgentCore({} as AgentDeps, host);
  const input = {
    sessionId: session.id,
    session,
    sessionInsert: { text: 'INSERT', values: [], stamp: () => {} },
    prompt: 'hi',
  } as Parameters<typeof sendNow>[1];
  return { core, input };
}

describe('sendNow', () => {
  it('STORE-PG-362: a claimed start failing before its launch is kept for its cancel only when its statement committed by itself (alone); one in a transaction with BEGIN rolls back with it and is not kept', async () => {
    const lone = failingStart(true);
    await expect(sendNow(lone.core, lone.input)).rejects.toThrow('injected fault');
    expect([...lone.core.unlaunched]).toEqual(['run_1']);

    const begun = failingStart(false);
    await expect(sendNow(begun.core, begun.input)).rejects.toThrow('injected fault');
    expect([...begun.core.unlaunched]).toEqual([]);
  });
});
