/**
 * Activation caps of health follow-ons (spec, Limits: "a cap can skip an activation"; names and
 * values are ours). Both count dispatched activations of this process in a rolling hour:
 *
 * | cap                | config key                                              | skip reason        |
 * |--------------------|---------------------------------------------------------|--------------------|
 * | process hour cap   | `options.health_followons.activation_caps.process_hour_cap` | `process_hour_cap` |
 * | session hour cap   | `options.health_followons.activation_caps.session_hour_cap` | `session_hour_cap` |
 *
 * Skipped activations do not count. A cap of 0 skips every activation.
 * @module
 */
import type { Clock } from '../util/ids';

export const HOUR_MS = 3_600_000;

export type CapReason = 'process_hour_cap' | 'session_hour_cap';

export interface CapLimits {
  process_hour_cap: number;
  session_hour_cap: number;
}

export interface CapUsage {
  process_hour_cap: { limit: number; used: number; resets_at: number | null };
  session_hour_cap: { limit: number; sessions: { session_id: string; used: number; resets_at: number }[] };
}

export interface ActivationCaps {
  /** The cap that blocks a new activation of the session now, if any. */
  blocking(sessionId: string, limits: CapLimits): CapReason | undefined;
  /** Count a dispatched activation. */
  record(sessionId: string): void;
  usage(limits: CapLimits): CapUsage;
}

export function createActivationCaps(clock: Clock): ActivationCaps {
  let processTimes: number[] = [];
  const sessionTimes = new Map<string, number[]>();

  const prune = () => {
    const since = clock.now() - HOUR_MS;
    processTimes = processTimes.filter((t) => t > since);
    for (const [sessionId, times] of sessionTimes) {
      const kept = times.filter((t) => t > since);
      if (kept.length) sessionTimes.set(sessionId, kept);
      else sessionTimes.delete(sessionId);
    }
  };

  return {
    blocking(sessionId, limits) {
      prune();
      if (processTimes.length >= limits.process_hour_cap) return 'process_hour_cap';
      if ((sessionTimes.get(sessionId)?.length ?? 0) >= limits.session_hour_cap) return 'session_hour_cap';
      return undefined;
    },
    record(sessionId) {
      const now = clock.now();
      processTimes.push(now);
      sessionTimes.set(sessionId, [...(sessionTimes.get(sessionId) ?? []), now]);
    },
    usage(limits) {
      prune();
      return {
        process_hour_cap: {
          limit: limits.process_hour_cap,
          used: processTimes.length,
          resets_at: processTimes.length ? processTimes[0] + HOUR_MS : null,
        },
        session_hour_cap: {
          limit: limits.session_hour_cap,
          sessions: [...sessionTimes.entries()]
            .map(([session_id, times]) => ({ session_id, used: times.length, resets_at: times[0] + HOUR_MS }))
            .sort((a, b) => a.session_id.localeCompare(b.session_id)),
        },
      };
    },
  };
}
