/**
 * Forking a run: a new session holding a copy of the run's session history up to a step of the
 * run, or to its end (what `fork_agent_run` has always done). Step k is the run's k-th model
 * answer with its tool results; step 0 keeps the prompt only.
 * @module
 */
import { SvcError } from '../errors';
import type { RunLedger } from '../runs/run-ledger';
import type { Message, SessionStore } from '../sessions/types';
import type { EngineForkOptions, EngineForkResult } from './run-engine';

export interface ForkDeps {
  runs: Pick<RunLedger, 'require'>;
  sessions: Pick<SessionStore, 'require' | 'messages' | 'create' | 'appendMessage'>;
}

export async function forkRun(
  deps: ForkDeps,
  runId: string,
  options: EngineForkOptions = {},
): Promise<EngineForkResult> {
  const { runs, sessions } = deps;
  const run = await runs.require(runId);
  if (run.status === 'queued')
    throw new SvcError('conflict', `run ${run.id} has not started; nothing to fork`);
  const { step } = options;
  if (step !== undefined && (!Number.isInteger(step) || step < 0 || step > run.steps)) {
    throw new SvcError(
      'invalid_input',
      `step: run ${run.id} has ${run.steps} step(s); pass a step from 0 to ${run.steps}, or omit it to fork after the whole run`,
    );
  }
  const source = await sessions.require(run.session_id);
  const copied = historyThrough(await sessions.messages(source.id), run.id, step);
  const forkedFrom = { session_id: source.id, run_id: run.id, ...(step !== undefined ? { step } : {}) };
  const fork = await sessions.create({
    title: options.title ?? `fork of ${source.title || source.id}`,
    agent: source.agent,
    model: source.model,
    mode: source.mode,
    metadata: { forked_from: forkedFrom },
  });
  for (const m of copied) {
    await sessions.appendMessage({
      session_id: fork.id,
      role: m.role,
      parts: m.parts,
      model: m.model,
      provider: m.provider,
      usage: m.usage,
      cost: m.cost,
      run_id: m.run_id,
    });
  }
  return { session_id: fork.id, forked_from: forkedFrom, messages_copied: copied.length };
}

/** The messages up to the end of the run, or up to the end of its step `step`. */
function historyThrough(messages: Message[], runId: string, step: number | undefined): Message[] {
  const last = messages.map((m) => m.run_id).lastIndexOf(runId);
  if (last === -1) return [];
  let end = last + 1;
  if (step !== undefined) {
    let answers = 0;
    for (let i = 0; i <= last; i++) {
      const m = messages[i]!;
      if (m.run_id !== runId || m.role !== 'assistant') continue;
      answers++;
      if (answers > step) {
        end = i;
        break;
      }
    }
  }
  return messages.slice(0, end);
}
