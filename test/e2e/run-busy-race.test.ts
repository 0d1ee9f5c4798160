/**
 * `svc run --session <id>` refuses a session whose run another svc process or node is running,
 * with this command's next step (issue 18: two `svc run --session` from two nodes at once). The
 * command checks before it sends, and the send refuses too (`ifBusy: 'refuse'`): a run started by
 * the other process between the two is refused by the send, in the same words as the check's.
 * Here the check is blinded (`agent.state` of the command's App answers no other run), so the
 * refusal comes from the send.
 */
import { describe, expect, it, vi } from 'vitest';
import type { AppOptions } from '../../src/app';
import { runCli } from '../../src/surfaces/cli/index';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

const flags = vi.hoisted(() => ({ blind: false }));

vi.mock('../../src/app', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/app')>();
  return {
    ...real,
    createApp: async (options: AppOptions) => {
      const app = await real.createApp(options);
      if (flags.blind) {
        const state = app.agent.state.bind(app.agent);
        app.agent.state = async (sessionId) => ({ ...(await state(sessionId)), busy_elsewhere: null });
      }
      return app;
    },
  };
});

describe('svc run on a session busy elsewhere', () => {
  it('CLUSTER-25: a run the other process started after the check is refused by the send with the command’s next step, not the agent tool’s', async () => {
    const { app } = await agentApp([reply().hang()]);
    const sent = await app.agent.send({ prompt: 'long job' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    flags.blind = true;
    let stdout = '';
    let stderr = '';
    try {
      const code = await runCli(
        ['run', '--session', sent.session_id, 'me too', '--cwd', app.workspace, '--data-dir', app.dataDir],
        {
          stdout: { write: (s: string) => (stdout += s) },
          stderr: { write: (s: string) => (stderr += s) },
          env: app.env,
          cwd: app.workspace,
          signal: new AbortController().signal,
        },
      );
      expect(code).toBe(1);
    } finally {
      flags.blind = false;
    }
    expect(stdout).toBe('');
    expect(stderr).toContain(
      `session ${sent.session_id} is busy: run ${sent.run_id} is running in another svc process (pid ${process.pid}); wait for it, cancel it (svc session cancel --session-id ${sent.session_id}), or use another session`,
    );
    expect(stderr).not.toContain('update_agent_run');
    await app.agent.cancel(sent.session_id);
  });
});
