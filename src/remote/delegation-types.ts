/**
 * The shapes delegation's parts share: what a delegation asks, who calls, the deployed agents it
 * can name, and what the remote agents service needs (`RemoteAgentDeps`).
 * @module
 */
import type { Config } from '../config/schema';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { Clock, Ids } from '../util/ids';
import type { ServedTaskRepository } from './served-task-repository';
import type { A2aStore } from './task-store';

export interface DelegateInput {
  card_url?: string;
  agent_name?: string;
  capability?: string;
  message: string;
  context_id?: string;
  wait: boolean;
  timeout_seconds: number;
}

export interface CallContext {
  sessionId?: string;
  runId?: string;
  signal: AbortSignal;
}

/** A deployed agent as delegation sees it (filled by the deploy service). */
export interface DeployedEndpoint {
  name: string;
  url: string;
  token?: string;
}

export interface RemoteAgentDeps {
  /** The delegated tasks and known cards (SQLite or PostgreSQL, chosen by the app wiring). */
  store: A2aStore;
  /** The tasks this process served as an A2A agent (./a2a-agent.ts reads them through the App). */
  served: ServedTaskRepository;
  clock: Clock;
  ids: Ids;
  fetch: typeof fetch;
  config: () => Config;
  redactor: Redactor;
  log: Logger;
  deployed: () => Promise<DeployedEndpoint[]>;
}

/** At most this many characters of a message or a result are stored. */
const MAX_STORED_TEXT = 100_000;

export function clip(text: string): string {
  return text.length > MAX_STORED_TEXT ? `${text.slice(0, MAX_STORED_TEXT)}…` : text;
}

export function safeOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
