/**
 * A step end's one statement on PostgreSQL (./end-step.ts): sent (`send`, the parts written apart
 * when a statement that carried the step's held start or text failed), and, for a last step end
 * sent alone before a finish that cannot carry it (./run-finish.ts, p-lastalone), kept as sent
 * when the store is lost there (`keep`): the finish's retry then finds it stored (`stored`) or
 * sends it anew (`again`), never both, so nothing is inserted twice.
 * @module
 */
import type { RunPatch } from '../runs/run-ledger';
import type { Usage } from '../sessions/types';
import type { AgentHost } from './deps';
import type { takeCall } from './held-calls';
import { type StepClosing, startStepClose } from './step-close';
import type { StepRecorder } from './step-recorder';
import { storeLost } from './store-lost';

type Riding = ReturnType<typeof takeCall>;
type Announced = { type: string; payload: Record<string, unknown> };

/** What the step end writes and publishes, as ./end-step.ts made it. */
export interface StepEndWrite {
  app: AgentHost;
  runId: string;
  sessionId: string;
  recorder: StepRecorder;
  patch: RunPatch;
  finished: Record<string, unknown>;
  stepUsage: Usage | null;
  stepCost: number;
  contextUsage: Announced | undefined;
  call: Riding;
}

export class StepEndSend {
  /**
   * The last send alone lost the store and was kept (`keep`): the recorder's state as that
   * statement took it, its events' stamp where the bus joined them (`joinedAt`) and the model call
   * it carried, until the finish's retry finds it stored (`stored`) or sends it anew (`again`).
   */
  private lost: { joinedAt?: number; types: string[]; riding: Riding } | undefined;

  constructor(
    private readonly w: StepEndWrite,
    /** The step's messages' close (./step-close.ts), made again when the step end is sent anew. */
    public closing: StepClosing,
  ) {}

  /** Its session events: the step's completions, then `context.usage`. */
  events(): Announced[] {
    const { contextUsage } = this.w;
    return contextUsage ? [...this.closing.completions(), contextUsage] : this.closing.completions();
  }

  /** Its effects once its statement answered (`announced`: its events were in it). */
  closed(announced: boolean): void {
    const { app, sessionId, contextUsage } = this.w;
    this.closing.completed(announced);
    if (contextUsage && !announced) app.bus.publish(sessionId, contextUsage.type, contextUsage.payload);
  }

  /** Whether a send alone is kept, its store lost (`keep`). */
  get kept(): boolean {
    return this.lost !== undefined;
  }

  /** The step end's one statement, `riding`: with the step's model call in it. */
  private async once(next: boolean, ordered: boolean, riding: Riding, keep = false) {
    const { app, runId, sessionId, recorder, patch, finished } = this.w;
    const now = this.closing.before;
    if (!now || !app.runs.updateAndAppendAfter) throw new Error('step end: no statement to send');
    const joining = this.events();
    let joinedAt: number | undefined;
    const joined = (at: number) => {
      joinedAt = at;
    };
    try {
      return await app.runs.updateAndAppendAfter(
        runId,
        patch,
        'step.finished',
        finished,
        now,
        // A step with no call ends the run: nothing is sent behind its end before it answers,
        // so it may wait for the bus's append in flight and carry its events (p-finishjoin).
        { sessionId, events: joining, next, ...(ordered ? { ordered } : {}), ...(keep ? { joined } : {}) },
        riding?.insert,
      );
    } catch (error) {
      // Kept: it may have committed (its answer lost); nothing restored nor written apart yet.
      if (keep && storeLost(error)) {
        const types = joining.map((e) => e.type);
        this.lost = { ...(joinedAt === undefined ? {} : { joinedAt }), types, riding };
        throw error;
      }
      recorder.heldCloseFailed();
      throw error;
    } finally {
      // Written, the call rode in it (`after` inserts nothing); failed, it is inserted alone.
      if (!this.lost) await riding?.after();
    }
  }

  /**
   * Sent. Its statement carried the step's held start or text too (p-heldstep) and failed: the
   * parts written as before they were held (the message with its start, the result), then the end
   * again; not when kept (`keep`, the store lost).
   */
  async send(next: boolean, ordered = false, riding = this.w.call, keep = false) {
    const { app, runId, sessionId, recorder, stepUsage, stepCost } = this.w;
    try {
      return await this.once(next, ordered, riding, keep);
    } catch (error) {
      if (this.lost || !recorder.heldOpenFailed()) throw error;
      app.log.warn('step end failed, written in parts', { run_id: runId, error });
      await recorder.release();
      await recorder.releaseTool();
      const again = startStepClose(app, recorder, sessionId, stepUsage, stepCost);
      this.closing = again instanceof Promise ? await again : again;
      return await this.once(next, ordered, undefined);
    }
  }

  /** The kept send did not commit: the recorder's state as before it, the statement made and sent anew. */
  async again(keep: boolean) {
    const { app, recorder, sessionId, stepUsage, stepCost } = this.w;
    const was = this.lost;
    this.lost = undefined;
    recorder.heldCloseFailed();
    recorder.heldOpenFailed();
    const rebuilt = startStepClose(app, recorder, sessionId, stepUsage, stepCost);
    this.closing = rebuilt instanceof Promise ? await rebuilt : rebuilt;
    return await this.send(true, true, was?.riding, keep);
  }

  /**
   * The kept send committed (its answer lost, ./finish-retry.ts `stepEndStored`): its effects as a
   * send that answered, its events as stored (the bus delivers what it joined, `EventBus.adopt`;
   * reserved ones were not appended: published now). False: no send kept.
   */
  stored(): boolean {
    const { app, runId, sessionId } = this.w;
    const was = this.lost;
    if (!was) return false;
    this.lost = undefined;
    this.closed(was.joinedAt !== undefined);
    if (was.joinedAt !== undefined)
      void app.bus.adopt?.(sessionId, was.types, was.joinedAt).catch((error: unknown) => {
        app.log.warn('step end’s stored events not read', { run_id: runId, error });
      });
    return true;
  }
}
