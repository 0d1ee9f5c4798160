/**
 * The payload of a run's `run.started` ledger event: written by src/agent/run-control.ts, or with
 * the claim on PostgreSQL (migration 33 `svc_claim_run_started` writes the same JSON text), or
 * with a new session's run inserted claimed (./pg-run-create-claimed.ts, `runStartedText`).
 * @module
 */
import type { RunRowInsert } from './run-repository';
import type { AgentRun } from './types';

/** `run.started`'s payload for a claimed run, keys in this order. */
export function runStartedPayload(run: AgentRun): Record<string, unknown> {
  return { agent: run.agent, origin: run.origin, pid: run.pid, options: run.options };
}

/**
 * `runStartedPayload`'s JSON text from the run's row as inserted (its options already JSON text,
 * inlined, not parsed and encoded again): the text migration 33 writes, keys in the same order.
 */
export function runStartedText(row: Pick<RunRowInsert, 'agent' | 'origin' | 'pid' | 'options'>): string {
  return `{"agent":${JSON.stringify(row.agent)},"origin":${JSON.stringify(row.origin)},"pid":${row.pid ?? 'null'},"options":${row.options}}`;
}
