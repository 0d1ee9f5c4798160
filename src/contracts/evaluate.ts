/**
 * Evaluating one obligation: run its command, look for its file, its open markers or its
 * session's approved plan, and say passed or failed with a detail.
 * @module
 */
import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { Obligation } from '../config/schema';
import type { MarkerService } from '../coordination/markers';
import { SvcError } from '../errors';
import type { Session } from '../sessions/session-store';
import type { ObligationResult } from './contract-repository';

export interface CommandOutcome {
  exit_code: number | null;
  output: string;
  timed_out: boolean;
  duration_ms: number;
}

/** Runs a command obligation (the tool layer runs it through the workspace shell and its asks). */
export type CommandRunner = (command: string, timeoutSeconds: number) => Promise<CommandOutcome>;

/** What an evaluation reads: the workspace (file_exists), the markers, the session (plan_approved). */
export interface EvaluateDeps {
  workspace: string;
  markers: () => Pick<MarkerService, 'list'>;
  session: (id: string) => Promise<Session | undefined>;
}

const DEFAULT_TIMEOUT_SECONDS = 300;
const DETAIL_CHARS = 2000;

export async function evaluateObligation(
  deps: EvaluateDeps,
  scope: string,
  o: Obligation,
  runCommand: CommandRunner,
): Promise<Omit<ObligationResult, 'ran_at' | 'scope'>> {
  switch (o.kind) {
    case 'command': {
      const outcome = await runCommand(o.command, o.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS);
      const tail = outcome.output.trim().slice(-DETAIL_CHARS);
      const passed = outcome.exit_code === 0 && !outcome.timed_out;
      const why = outcome.timed_out ? 'timed out' : `exit ${outcome.exit_code ?? 'killed'}`;
      return {
        status: passed ? 'passed' : 'failed',
        detail: tail ? `${why}\n${tail}` : why,
        exit_code: outcome.exit_code,
        duration_ms: outcome.duration_ms,
      };
    }
    case 'file_exists': {
      const full = resolve(deps.workspace, o.path);
      if (relative(deps.workspace, full).startsWith('..')) {
        return {
          status: 'failed',
          detail: `${o.path} is outside the workspace`,
          exit_code: null,
          duration_ms: null,
        };
      }
      const found = existsSync(full);
      return {
        status: found ? 'passed' : 'failed',
        detail: found ? `${o.path} exists` : `${o.path} does not exist`,
        exit_code: null,
        duration_ms: null,
      };
    }
    case 'no_markers': {
      const open = (await deps.markers().list(o.path ? { path: o.path } : {})).filter(
        (marker) => marker.kind === o.marker_kind,
      );
      const detail = open.length
        ? `${open.length} open ${o.marker_kind} marker(s): ${open
            .slice(0, 5)
            .map((m) => `${m.path}: ${m.message.slice(0, 80)}`)
            .join('; ')}`
        : `no open ${o.marker_kind} markers`;
      return { status: open.length ? 'failed' : 'passed', detail, exit_code: null, duration_ms: null };
    }
    case 'plan_approved': {
      if (!scope)
        return {
          status: 'failed',
          detail: 'plan approval is per session: evaluate with a session_id',
          exit_code: null,
          duration_ms: null,
        };
      const session = await deps.session(scope);
      const plan = session?.metadata.plan as { markdown?: unknown } | undefined;
      const phase = session?.metadata.workflow_phase;
      if (!plan || typeof plan.markdown !== 'string')
        return {
          status: 'failed',
          detail: 'the session has no plan (set_plan_artifact)',
          exit_code: null,
          duration_ms: null,
        };
      if (phase !== 'execute')
        return {
          status: 'failed',
          detail: 'the plan is not approved yet (approve_plan or /approve)',
          exit_code: null,
          duration_ms: null,
        };
      return { status: 'passed', detail: 'the plan is approved', exit_code: null, duration_ms: null };
    }
    default: {
      const never: never = o;
      throw new SvcError('internal', `unknown obligation kind ${String((never as { kind: string }).kind)}`);
    }
  }
}
