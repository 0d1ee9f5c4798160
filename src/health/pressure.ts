/**
 * The `health.token_pressure` signal per session: armed until a `context.usage` ratio reaches the
 * threshold (the signal fires once), re-armed by a compaction or a ratio below the threshold. A
 * session still pressured when its run ends is what the summarize rule acts on.
 * @module
 */

interface SessionPressure {
  armed: boolean;
  pressured: boolean;
  ratio: number;
  runId: string | null;
  at: number;
}

export interface PressureTracker {
  /** A step's context usage; true when the signal fires for this session now. */
  usage(
    sessionId: string,
    usage: { ratio: number; run_id: string | null; at: number },
    threshold: number,
  ): boolean;
  /** A compaction finished: the session is no longer pressured and the signal re-arms. */
  compacted(sessionId: string): void;
  /**
   * A run ended: the pressure it ended under (once per pressured stretch: the next activation
   * needs a compaction or a drop first), or undefined when the session is not pressured.
   */
  runEnded(sessionId: string): { ratio: number; runId: string | null } | undefined;
  forget(sessionId: string): void;
  /** Sessions whose last context usage is at or over the threshold (since the last compaction). */
  pressured(): { session_id: string; run_id: string | null; ratio: number; at: number }[];
}

export function createPressureTracker(): PressureTracker {
  const sessions = new Map<string, SessionPressure>();
  const stateOf = (sessionId: string): SessionPressure => {
    let state = sessions.get(sessionId);
    if (!state) {
      state = { armed: true, pressured: false, ratio: 0, runId: null, at: 0 };
      sessions.set(sessionId, state);
    }
    return state;
  };
  return {
    usage(sessionId, usage, threshold) {
      const state = stateOf(sessionId);
      state.ratio = usage.ratio;
      state.runId = usage.run_id;
      state.at = usage.at;
      if (usage.ratio < threshold) {
        state.armed = true;
        state.pressured = false;
        return false;
      }
      state.pressured = true;
      if (!state.armed) return false;
      state.armed = false;
      return true;
    },
    compacted(sessionId) {
      const state = sessions.get(sessionId);
      if (state) {
        state.armed = true;
        state.pressured = false;
      }
    },
    runEnded(sessionId) {
      const state = sessions.get(sessionId);
      if (!state?.pressured) return undefined;
      state.pressured = false;
      return { ratio: state.ratio, runId: state.runId };
    },
    forget(sessionId) {
      sessions.delete(sessionId);
    },
    pressured() {
      return [...sessions.entries()]
        .filter(([, s]) => s.pressured)
        .map(([session_id, s]) => ({ session_id, run_id: s.runId, ratio: s.ratio, at: s.at }))
        .sort((a, b) => a.session_id.localeCompare(b.session_id));
    },
  };
}
