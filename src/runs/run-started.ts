/**
 * The payload of a run's `run.started` ledger event: written by src/agent/run-control.ts, or with
 * the claim on PostgreSQL (migration 33 `svc_claim_run_started` writes the same JSON text).
 * @module
 */
import type { AgentRun } from './types';

/** `run.started`'s payload for a claimed run, keys in this order. */
export function runStartedPayload(run: AgentRun): Record<string, unknown> {
  return { agent: run.agent, origin: run.origin, pid: run.pid, options: run.options };
}
