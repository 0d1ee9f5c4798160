/**
 * The in-process engine's reply: which pending request an id names. Pins: a run id answers only
 * that run's requests (not another run's of the same session); several pending with no
 * request_id is a conflict listing them.
 */
import { describe, expect, it } from 'vitest';
import type { PendingPermission } from '../permissions/permission-types';
import type { AgentRun } from '../runs/types';
import type { Session } from '../sessions/types';
import { createInProcessEngine } from './in-process-engine';

const unused = (): never => {
  throw new Error('not used by reply');
};

const session: Session = {
  id: 'ses_1',
  parent_id: null,
  title: '',
  mode: 'build',
  agent: 'build',
  model: null,
  reasoning_effort: null,
  workspace: '/w',
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  metadata: {},
  created_at: 0,
  updated_at: 0,
};

const run: AgentRun = {
  id: 'run_1',
  session_id: 'ses_1',
  parent_run_id: null,
  family_session_id: 'ses_1',
  status: 'running',
  agent: 'build',
  model: null,
  origin: 'api',
  prompt: 'p',
  options: {},
  reason: null,
  error: null,
  failure: null,
  steps: 0,
  usage: { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 },
  cost: 0,
  result_message_id: null,
  pid: null,
  host: null,
  runner: null,
  cancel_requested: false,
  created_at: 0,
  started_at: 0,
  finished_at: null,
  updated_at: 0,
};

const request = (id: string, runId: string): PendingPermission => ({
  request_id: id,
  session_id: 'ses_1',
  run_id: runId,
  tool_call_id: null,
  tool: 'touch',
  title: 'touch',
  scope: null,
  safe: false,
  details: null,
  created_at: 0,
});

function engineWith(pending: PendingPermission[]) {
  const answered: string[] = [];
  const engine = createInProcessEngine({
    agent: {
      send: unused,
      cancelRun: unused,
      pendingPermissions: () => pending,
      async answerPermission(requestId) {
        answered.push(requestId);
        const found = pending.find((p) => p.request_id === requestId);
        if (!found) throw new Error(`unknown ${requestId}`);
        return found;
      },
    },
    runs: {
      get: async (id) => (id === run.id ? run : undefined),
      require: unused,
      events: unused,
      list: unused,
    },
    sessions: {
      get: async (id) => (id === session.id ? session : undefined),
      require: unused,
      messages: unused,
      create: unused,
      appendMessage: unused,
    },
  });
  return { engine, answered };
}

describe('in-process engine reply', () => {
  it("answers the request of the run named, not another run's in its session", async () => {
    const { engine, answered } = engineWith([request('perm_a', 'run_other'), request('perm_b', 'run_1')]);
    await engine.reply('run_1', { decision: 'allow_once' });
    expect(answered).toEqual(['perm_b']);
  });

  it('refuses to guess among several pending requests', async () => {
    const { engine, answered } = engineWith([request('perm_a', 'run_1'), request('perm_b', 'run_1')]);
    await expect(engine.reply('ses_1', { decision: 'deny' })).rejects.toMatchObject({
      code: 'conflict',
      message: 'ses_1 has 2 pending permission requests; pass request_id (one of perm_a, perm_b)',
    });
    await engine.reply('ses_1', { decision: 'deny', request_id: 'perm_b' });
    expect(answered).toEqual(['perm_b']);
  });
});
