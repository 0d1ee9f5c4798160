/**
 * Turns runtime signals on the session bus into recommendations, and later evidence into their
 * outcomes. Each rule names its zone, what it recommends, and what counts as following it:
 *
 * | zone              | kind               | recorded when                                   | followed when                              | dismissed when            |
 * |-------------------|--------------------|-------------------------------------------------|--------------------------------------------|---------------------------|
 * | token_pressure    | compact_session    | context.usage ratio ≥ threshold                 | compaction.finished in the session         | explicit dismiss          |
 * | loop_detection    | revise_instructions| loop.detected                                   | a new run starts in the session            | explicit dismiss          |
 * | permission_policy | allow_tool         | the same tool allowed once 3 times in a session | allow for session, or listed in allowed_tools | the tool is denied      |
 * | compaction        | start_new_session  | the 2nd compaction of a session                 | a new top-level session is created         | explicit dismiss          |
 * | provider_recovery | review_model       | provider_recovery.changed                       | the session model is changed               | explicit dismiss          |
 *
 * Anything still pending when its window passes is expired.
 * @module
 */
import type { Config } from '../../config/schema';
import type { EventBus, SessionEvent } from '../../events/bus';
import { ownContext } from '../../events/own-context';
import type { Logger } from '../../log';
import type { Clock } from '../../util/ids';
import type {
  CognitionZone,
  PendingFilter,
  RecommendationLedger,
  RecommendationRepository,
} from './recommendation-store';

const HOUR = 3600;

/** The events a rule reads (the others never reach the ledger). */
const RECORDED = new Set([
  'context.usage',
  'compaction.finished',
  'loop.detected',
  'run.started',
  'permission.resolved',
  'session.created',
  'provider_recovery.changed',
  'session.updated',
]);

export interface RecommendationRecorderDeps {
  bus: Pick<EventBus, 'subscribe'>;
  clock: Clock;
  config: () => Config;
  log: Logger;
}

/**
 * Subscribes to the session bus; returns the unsubscribe. The ledger's work runs in the recorder's
 * own async context (src/events/own-context.ts), taken at the call (the app's start, outside every
 * transaction), not in the publisher's: a compat start delivers its joined events with its
 * transaction still open, and the recorder's read of the pending rows went into that transaction
 * and made the lone start a BEGIN … COMMIT (STORE-PG-390).
 */
export function startRecommendationRecorder(
  app: RecommendationRecorderDeps,
  ledger: RecommendationLedger,
): () => void {
  const allowCounts = new Map<string, number>();
  const compactions = new Map<string, number>();
  const own = ownContext('svc.recommendation-recorder');

  const threshold = () => app.config().options.health_followons.token_pressure_threshold;

  /** One event's step, run in the ledger's order (a bus listener cannot await). */
  const handle = async (ledger: RecommendationRepository, event: SessionEvent) => {
    const p = event.payload as Record<string, any>;
    const session = event.session_id;
    switch (event.type) {
      case 'context.usage': {
        if (pressing(p, threshold()) && !(await once(ledger, session, 'token_pressure', 'compact_session'))) {
          await ledger.record({
            zone: 'token_pressure',
            kind: 'compact_session',
            session_id: session,
            run_id: p.run_id,
            payload: { ratio: p.ratio },
            window_seconds: HOUR,
            evidence: { ratio: p.ratio },
          });
        }
        break;
      }
      case 'compaction.finished': {
        await follow(ledger, session, 'token_pressure', 'compact_session', {
          compaction_message_id: p.summary_message_id,
        });
        const n = (compactions.get(session) ?? 0) + 1;
        compactions.set(session, n);
        if (n === 2)
          await ledger.record({
            zone: 'compaction',
            kind: 'start_new_session',
            session_id: session,
            payload: { compactions: n },
            window_seconds: 24 * HOUR,
          });
        break;
      }
      case 'loop.detected':
        await ledger.record({
          zone: 'loop_detection',
          kind: 'revise_instructions',
          session_id: session,
          run_id: p.run_id,
          payload: { tool: p.tool, repeats: p.repeats },
          window_seconds: HOUR,
          evidence: { tool: p.tool },
        });
        break;
      case 'run.started':
        await follow(ledger, session, 'loop_detection', 'revise_instructions', { run_id: p.run_id });
        break;
      case 'permission.resolved': {
        const tool = String(p.tool ?? '');
        if (!tool) break;
        if (p.decision === 'deny') {
          for (const rec of await ledger.pending({
            session_id: session,
            zone: 'permission_policy',
            kind: 'allow_tool',
          })) {
            if (rec.evidence.tool === tool)
              await ledger.close(rec.id, 'dismissed', { denied_at: app.clock.now() });
          }
        } else if (p.decision === 'allow_session') {
          await follow(
            ledger,
            session,
            'permission_policy',
            'allow_tool',
            { decision: 'allow_session' },
            (e) => e.tool === tool,
          );
        } else {
          const key = `${session}:${tool}`;
          const n = (allowCounts.get(key) ?? 0) + 1;
          allowCounts.set(key, n);
          if (n === 3) {
            await ledger.record({
              zone: 'permission_policy',
              kind: 'allow_tool',
              session_id: session,
              payload: { tool },
              window_seconds: 24 * HOUR,
              evidence: { tool },
            });
          }
        }
        break;
      }
      case 'session.created':
        if (p.parent_id === null)
          await follow(ledger, undefined, 'compaction', 'start_new_session', { new_session_id: session });
        break;
      case 'provider_recovery.changed':
        await ledger.record({
          zone: 'provider_recovery',
          kind: 'review_model',
          session_id: session,
          run_id: p.run_id,
          payload: { from: p.from, to: p.to },
          window_seconds: 24 * HOUR,
        });
        break;
      case 'session.updated':
        if (modelChanged(p))
          await follow(ledger, session, 'provider_recovery', 'review_model', { model_changed: true });
        break;
      default:
        return;
    }
    await ledger.expire();
  };
  const onEvent = (event: SessionEvent) => {
    if (!RECORDED.has(event.type)) return;
    // Nothing to record and nothing due to sweep (a step's context.usage under the threshold):
    // no step queued, no promise.
    if (sweepsOnly(event, threshold()) && ledger.quiet()) return;
    // A run's start and a new top-level session (every compat request) only follow pending
    // recommendations of their rule: none pending (the store answers at once, SQLite), nothing
    // queued and no sweep due, no step.
    const follows = followsOnly(event);
    if (follows && ledger.nonePending(follows)) return;
    own.run(() =>
      ledger
        .serial((store) => handle(store, event))
        .catch((error) => app.log.warn('recommendation recorder failed', { type: event.type, error })),
    );
  };
  return app.bus.subscribe('*', onEvent);
}

/** Closes as followed the pending recommendations of the rule (those `match` takes). */
const follow = async (
  ledger: RecommendationRepository,
  sessionId: string | undefined,
  zone: CognitionZone,
  kind: string,
  evidence: Record<string, unknown>,
  match?: (e: Record<string, unknown>) => boolean,
) => {
  for (const rec of await ledger.pending({ session_id: sessionId, zone, kind })) {
    if (match && !match(rec.evidence)) continue;
    await ledger.close(rec.id, 'followed', evidence);
  }
};

/** Whether the session already has a pending recommendation of the rule. */
const once = async (ledger: RecommendationRepository, sessionId: string, zone: CognitionZone, kind: string) =>
  (await ledger.pending({ session_id: sessionId, zone, kind })).length > 0;

const pressing = (p: Record<string, any>, threshold: number) =>
  typeof p.ratio === 'number' && p.ratio >= threshold;
const modelChanged = (p: Record<string, any>) => Array.isArray(p.changed) && p.changed.includes('model');

/** Whether the event's rule has nothing to do but the sweep after it (its condition unmet). */
function sweepsOnly(event: SessionEvent, threshold: number): boolean {
  const p = event.payload as Record<string, any>;
  if (event.type === 'context.usage') return !pressing(p, threshold);
  if (event.type === 'session.created') return p.parent_id !== null;
  if (event.type === 'session.updated') return !modelChanged(p);
  return false;
}

/** The pending recommendations the event's rule would only follow (then sweep), if that is all it does. */
function followsOnly(event: SessionEvent): PendingFilter | undefined {
  if (event.type === 'run.started')
    return { session_id: event.session_id, zone: 'loop_detection', kind: 'revise_instructions' };
  if (event.type === 'session.created' && (event.payload as Record<string, any>).parent_id === null)
    return { zone: 'compaction', kind: 'start_new_session' };
  return undefined;
}

/** Checks allowed_tools on demand (config is not an event): follows allow_tool recommendations. */
export async function followConfiguredAllows(
  app: { readonly config: Config },
  ledger: RecommendationLedger,
): Promise<void> {
  const allowed = new Set(app.config.permissions.allowed_tools);
  for (const rec of await ledger.pending({ zone: 'permission_policy', kind: 'allow_tool' })) {
    if (allowed.has(String(rec.evidence.tool)))
      await ledger.close(rec.id, 'followed', { allowed_tools: true });
  }
}
