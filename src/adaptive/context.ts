/**
 * What the parts of adaptive orchestration share: the named dependencies of the layer, its store,
 * and the small helpers every part reads the session tree, the settings and the run ledger with.
 * @module
 */
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { Clock, Ids } from '../util/ids';
import { decodeGenome, type Genome } from './genome';
import type { AdaptiveRow, AdaptiveStore } from './store';

/** One tool of a session's effective tool set, as the funnel (tools/core/funnel.ts) reports it. */
export interface ToolFunnelEntry {
  name: string;
  registered: boolean;
  removed_by: string | null;
  reason: string | null;
}

export interface AdaptiveDeps {
  /** The adaptive orchestration store (SQLite ./store.ts or PostgreSQL ./pg-adaptive-store.ts). */
  store: AdaptiveStore;
  /** Whether a database exists to read (reads never create one). */
  dbPresent: () => boolean;
  bus: Pick<EventBus, 'publish' | 'subscribe' | 'flush' | 'heldOwn' | 'drained'>;
  clock: Clock;
  ids: Ids;
  log: Logger;
  redactor: Redactor;
  config: () => Config;
  sessions: Pick<SessionStore, 'get' | 'require' | 'root' | 'update'>;
  runs: Pick<RunLedger, 'get' | 'list' | 'events' | 'append'>;
  /** Session states, run results and the reviewer's sub-agent run. */
  agent: Pick<AgentService, 'state' | 'result' | 'runChild'>;
  /** The operating packs: the choreography the session's active pack sets, if any. */
  packs?: { choreography(sessionId: string): Promise<string | undefined> };
  /** The session's tool set after every funnel stage (a genome's required tools must pass). */
  toolFunnel: (sessionId: string) => Promise<ToolFunnelEntry[]>;
}

/** What this process's monitor did (never anything a read does). */
export interface MonitorStats {
  classifications: number;
  evaluations: number;
  reshapes_applied: number;
  reviews_started: number;
}

export const EVENT = {
  changed: 'adaptive_orchestration.changed',
  genome: 'adaptive_orchestration.genome',
  monitor: 'adaptive_orchestration.monitor_evaluation',
  reshape: 'adaptive_orchestration.reshape',
} as const;

export interface AdaptiveContext {
  readonly deps: AdaptiveDeps;
  readonly store: AdaptiveStore;
  readonly log: Logger;
  readonly stats: MonitorStats;
  /** Set once by close(): late callbacks check it first. */
  readonly lifecycle: { closed: boolean };
  settings(): Config['options']['adaptive_orchestration'];
  enabled(): boolean;
  historyMax(): number;
  defaults(compactionThreshold?: number): { parallelCap: number; compactionThreshold: number };
  /** The root session of a session's family; undefined for an unknown session. */
  rootOf(sessionId: string): Promise<string | undefined>;
  genomeOf(row: AdaptiveRow | undefined): Genome | undefined;
  /** The session has a run (or a compaction) going. */
  sessionActive(root: string): Promise<boolean>;
  safeState(root: string): Promise<Awaited<ReturnType<AgentService['state']>> | undefined>;
  /** Appends to a run's ledger, when there is a run; a failure is logged, never thrown. */
  ledger(runId: string | null | undefined, type: string, payload: Record<string, unknown>): Promise<void>;
}

export function createAdaptiveContext(deps: AdaptiveDeps): AdaptiveContext {
  const log = deps.log.child({ component: 'adaptive' });
  const settings = () => deps.config().options.adaptive_orchestration;
  const safeState = async (root: string) => {
    try {
      return await deps.agent.state(root);
    } catch {
      return undefined;
    }
  };
  return {
    deps,
    store: deps.store,
    log,
    stats: { classifications: 0, evaluations: 0, reshapes_applied: 0, reviews_started: 0 },
    lifecycle: { closed: false },
    settings,
    enabled: () => settings().enabled === true,
    historyMax: () => settings().monitor.regulatory_history_max_events,
    defaults: (compactionThreshold) => ({
      parallelCap: settings().max_parallel_agents,
      compactionThreshold: compactionThreshold ?? deps.config().options.compaction_threshold,
    }),
    async rootOf(sessionId) {
      const session = await deps.sessions.get(sessionId);
      if (!session) return undefined;
      return session.parent_id ? await deps.sessions.root(sessionId) : session.id;
    },
    genomeOf(row) {
      const decoded = row ? decodeGenome(row.genome) : undefined;
      return decoded?.ok ? decoded.genome : undefined;
    },
    async sessionActive(root) {
      try {
        return (await deps.agent.state(root)).state !== 'idle';
      } catch {
        return false;
      }
    },
    safeState,
    async ledger(runId, type, payload) {
      if (!runId) return;
      try {
        await deps.runs.append(runId, type, payload);
      } catch (error) {
        log.warn('run ledger append failed', { run_id: runId, type, error });
      }
    },
  };
}

export function describe(error: unknown): string {
  return SvcError.is(error) ? error.message : error instanceof Error ? error.message : String(error);
}
