/**
 * What the scheduler needs (`SchedulerDeps`) and the shapes its parts share: the ports it calls
 * the agent and the recipes through, and the result of one firing.
 * @module
 */
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import type { Logger } from '../log';
import type { PermissionService } from '../permissions/permission-service';
import type { Redactor } from '../redact';
import type { SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import type { OpContext } from '../workspace/context';
import type { ScheduleStore, ScheduleTrigger } from './schedule-store';

/** What a firing asks of the agent: a session for a `new` job, a prompt sent, its run awaited. */
export type SchedulerAgent = Pick<AgentService, 'send' | 'wait' | 'createSession'>;

/** Runs a recipe job (the recipe service's `run`, as the scheduler calls it). */
export interface ScheduledRecipes {
  run(
    name: string,
    params: Record<string, unknown>,
    options: { caller: { sessionId?: string; signal: AbortSignal }; approve?: OpContext['approve'] },
  ): Promise<{ status: string; run_id: string }>;
}

export interface SchedulerDeps {
  store: ScheduleStore;
  clock: Clock;
  log: Logger;
  redactor: Redactor;
  config: () => Config;
  sessions: Pick<SessionStore, 'get' | 'require'>;
  permissions: Pick<PermissionService, 'ask'>;
  /** Built after the scheduler: read when a job fires. */
  agent: () => SchedulerAgent;
  recipes: () => ScheduledRecipes;
  /** Whether `run_recipe` is in this build's tool registry. */
  recipeToolAvailable: () => boolean;
}

export interface FireResult {
  schedule_id: string;
  schedule_run_id: string;
  trigger: ScheduleTrigger;
  status: 'started' | 'failed';
  session_id: string | null;
  run_id: string | null;
  error: string | null;
}
