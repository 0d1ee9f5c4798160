/**
 * `run.started`'s payload text from a new run's row (`runStartedText`, src/runs/run-started.ts,
 * p-pgstart2): the JSON text a run inserted claimed on PostgreSQL writes, the value
 * `runStartedPayload` gives the run, keys in the same order, the same text as encoding it.
 */
import { describe, expect, it } from 'vitest';
import { newRunRow } from '../../src/runs/new-run';
import { runStartedPayload, runStartedText } from '../../src/runs/run-started';
import type { AgentRun } from '../../src/runs/types';

const owner = { pid: 4242, host: 'h', runner: 'rnr_t' };
const rowOf = (options: Record<string, unknown>, status: 'queued' | 'running') =>
  newRunRow(
    {
      session_id: 'ses_1',
      family_session_id: 'ses_1',
      agent: 'build "x"\n',
      origin: 'openai-compat',
      prompt: 'hi',
      options,
      status,
    },
    'run_1',
    1000,
    owner,
  );
// The run as its row reads back: the options parsed.
const runOf = (row: ReturnType<typeof rowOf>) =>
  ({ ...row, options: JSON.parse(row.options) }) as unknown as AgentRun;

describe('run.started’s payload text', () => {
  it('STORE-PG-294: parses to runStartedPayload(run)’s value, keys in order, and is its JSON text (pid set or null, options nested or empty)', () => {
    for (const [options, status] of [
      [{ max_steps: 3, yolo: true, unattended: { mode: 'deny', note: 'ü' } }, 'running'],
      [{}, 'queued'],
    ] as const) {
      const row = rowOf(options, status);
      const text = runStartedText(row);
      const payload = runStartedPayload(runOf(row));
      const parsed = JSON.parse(text) as Record<string, unknown>;
      expect(parsed).toEqual(payload);
      expect(Object.keys(parsed)).toEqual(['agent', 'origin', 'pid', 'options']);
      expect(Object.keys(parsed)).toEqual(Object.keys(payload));
      expect(text).toBe(JSON.stringify(payload));
      expect(parsed.pid).toBe(status === 'running' ? 4242 : null);
    }
  });
});
