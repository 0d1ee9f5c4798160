/**
 * The step driver's sink (./step-driver.ts): a sink's own failure carried through the driver, and
 * the end of a step the driver does not wait for before the next model request (`overlapsStepEnd`,
 * PostgreSQL, issue 18 item 6, p-pgpipe; ./step-ahead.ts).
 * @module
 */

import type { SharedV3ProviderMetadata } from '@ai-sdk/provider';
import type { LanguageModelUsage } from 'ai';
import type { PartSink } from './pulled-parts';

/** A part of the driven steps: the shapes of `streamText`'s `fullStream` parts the run records. */
export type StepPart =
  | { type: 'start-step' }
  | {
      type: 'text-delta' | 'reasoning-delta';
      id: string;
      text: string;
      providerMetadata?: SharedV3ProviderMetadata;
    }
  | { type: 'text-end' | 'reasoning-end'; id: string; providerMetadata?: SharedV3ProviderMetadata }
  | {
      type: 'tool-call';
      toolCallId: string;
      toolName: string;
      input: unknown;
      providerMetadata?: SharedV3ProviderMetadata;
      invalid?: boolean;
    }
  | { type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; input: unknown; error: unknown }
  | {
      type: 'finish-step';
      finishReason: string;
      usage: LanguageModelUsage;
      /** The next model request goes out before the sink's promise for this part answers (`overlapsStepEnd`). */
      overlaps?: true;
    }
  | { type: 'finish'; finishReason: string }
  | { type: 'error'; error: unknown };

/** A sink's own throw or rejection, carried through the driver's catches to the drive's caller. */
export class SinkFailure {
  constructor(readonly cause: unknown) {}
}

/**
 * `part` handed to `sink`: its promise when it answers one. A throw is a SinkFailure; a rejection
 * is the promise's, wrapped only where a step's errors are caught (`readStep`), so a part that
 * waits costs no promise more.
 */
export function handOn(sink: PartSink<StepPart>, part: StepPart): Promise<void> | undefined {
  try {
    return sink(part);
  } catch (error) {
    throw new SinkFailure(error);
  }
}

/**
 * The end of the step before while it is pending (`overlapsStepEnd`): the parts handed on wait for
 * it (`sink`), and so does the drive's end (`settled`); its rejection aborts the model request in
 * flight (`signal`) and is the rejection of every part handed on after it. Once it answered, a
 * part handed on while the run is aborted (a cancel the step end learnt) ends the drive.
 */
export class StepEndGate {
  private ending: Promise<void> | undefined;
  private abort: AbortController | undefined;
  /** The step's settings, prepared before the step end answered, did not hold once it did. */
  private stale = false;

  constructor(
    private readonly run: AbortSignal,
    private readonly into: PartSink<StepPart>,
  ) {}

  /** The step end to wait for. */
  set(ending: Promise<void>): void {
    const abort = new AbortController();
    this.abort = abort;
    this.ending = ending;
    ending.catch((error: unknown) => abort.abort(error));
  }

  /**
   * The step's settings, prepared while the step end was pending, checked once it answered:
   * `holds()` false aborts the request (`takeStale` then answers true: the step is prepared again).
   */
  check(holds: (() => boolean) | undefined): void {
    const { ending, abort } = this;
    if (!ending || !abort || !holds) return;
    ending.then(
      () => {
        if (holds()) return;
        this.stale = true;
        abort.abort(new Error('the step end changed the step`s settings'));
      },
      () => {},
    );
  }

  /** Whether the step is to be prepared and asked again (its settings did not hold); the step end is past. */
  takeStale(): boolean {
    if (!this.stale) return false;
    this.stale = false;
    this.ending = undefined;
    this.abort = undefined;
    return true;
  }

  /** The pending step end, for the next step's preparation. */
  get pending(): Promise<void> | undefined {
    return this.ending;
  }

  /** The model request's signal: the run's, and the pending step end's failure. */
  signal(): AbortSignal {
    return this.abort ? AbortSignal.any([this.run, this.abort.signal]) : this.run;
  }

  /** Waits for the pending step end, if any; its failure thrown. */
  settled(): Promise<void> | undefined {
    const ending = this.ending;
    if (!ending) return undefined;
    return ending.then(() => {
      if (this.ending === ending) {
        this.ending = undefined;
        this.abort = undefined;
      }
    });
  }

  /** The sink the parts go through: after the pending step end, if any. */
  readonly sink: PartSink<StepPart> = (part) => {
    const settling = this.settled();
    if (!settling) return this.into(part);
    return settling.then(() => {
      if (this.run.aborted) throw this.run.reason;
      if (this.stale) throw new Error('the step end changed the step`s settings');
      return this.into(part);
    });
  };
}
