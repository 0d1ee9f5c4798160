/**
 * `get_loop_detection_status`: the loop detector's configuration (src/agent/loop-detector.ts:
 * the same call with the same result `options.loop_detection.max_repeats` times in a row stops
 * the run), every `loop.detected` in the run ledger, and the runs it stopped.
 * @module
 */
import { clip, type HealthReadoutDeps, ledgerEvents, runs, scopeOf } from './evidence';

export interface LoopDetectionStatus {
  session_id: string | null;
  since_hours: number;
  config: {
    enabled: true;
    max_repeats: number;
    rule: string;
  };
  detections: {
    total: number;
    by_tool: { tool: string; count: number }[];
    last_detected_at: number | null;
  };
  /** `loop.detected` ledger events, newest first. */
  history: { at: number; session_id: string; run_id: string; tool: string; repeats: number }[];
  /** Runs the detector stopped, newest first. */
  recent_stops: {
    run_id: string;
    session_id: string;
    status: string;
    reason: string;
    finished_at: number | null;
  }[];
}

export async function loopDetectionStatus(
  app: HealthReadoutDeps,
  input: { session_id?: string; since_hours: number; limit: number },
): Promise<LoopDetectionStatus> {
  const since = app.clock.now() - input.since_hours * 3_600_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const maxRepeats = app.config.options.loop_detection.max_repeats;
  const detected = await ledgerEvents(app, scope, ['loop.detected']);
  const byTool = new Map<string, number>();
  for (const event of detected) {
    const tool = String(event.payload.tool ?? '');
    byTool.set(tool, (byTool.get(tool) ?? 0) + 1);
  }
  const stops = await runs(app, scope, { reasonPrefix: 'loop detected', limit: input.limit });
  return {
    session_id: input.session_id ?? null,
    since_hours: input.since_hours,
    config: {
      enabled: true,
      max_repeats: maxRepeats,
      rule: `the same tool called with the same input and the same result ${maxRepeats} times in a row stops the run (status failed)`,
    },
    detections: {
      total: detected.length,
      by_tool: [...byTool.entries()]
        .map(([tool, count]) => ({ tool, count }))
        .sort((a, b) => b.count - a.count || a.tool.localeCompare(b.tool)),
      last_detected_at: detected[0]?.created_at ?? null,
    },
    history: detected.slice(0, input.limit).map((event) => ({
      at: event.created_at,
      session_id: event.session_id,
      run_id: event.run_id,
      tool: String(event.payload.tool ?? ''),
      repeats: Number(event.payload.repeats ?? 0),
    })),
    recent_stops: stops.map((run) => ({
      run_id: run.id,
      session_id: run.session_id,
      status: run.status,
      reason: clip(run.reason, 300),
      finished_at: run.finished_at,
    })),
  };
}
