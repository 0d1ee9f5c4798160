/**
 * A text step's deltas of the model's current read, once its message is written (PostgreSQL,
 * `StepRecorderOptions.holdsText`, p-pgtail; ./step-recorder-core.ts): their events are published
 * once that read is done (a check-phase callback, as a held text's release, p-pgcompat7), so a
 * read's text reaches the client at the read's end as before; or, when the step ends in that read
 * (its last), taken by the step end (`take`) and appended in its statement, or its run's finish's,
 * before the message's `message.completed`: one round trip after the model's last byte where the
 * deltas' append and the finish behind it were two. Whatever else writes before the read's end
 * publishes them first (`publish`: a call, a result, a stop).
 * @module
 */
import type { SessionEventWrite } from '../sessions/types';

export class ReadTail {
  /** The read's events not yet published nor taken. */
  private held: SessionEventWrite[] | undefined;
  /** Taken by the step end's statement (`take`), until it answered or failed (`settle`). */
  private carried: SessionEventWrite[] | undefined;

  constructor(private readonly publishOne: (event: SessionEventWrite) => void) {}

  /** The events a step end's statement carries (`take`), if any. */
  get taken(): readonly SessionEventWrite[] | undefined {
    return this.carried;
  }

  /** The event held; the read's first queues the tail's publication once the read is done. */
  hold(event: SessionEventWrite): void {
    if (this.held) {
      this.held.push(event);
      return;
    }
    this.later([event]);
  }

  /** What is held published now, in order (nothing held: nothing). */
  publish(): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    for (const event of held) this.publishOne(event);
  }

  /** The step end takes what is held for its statement (`taken`). */
  take(): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    this.carried = [...(this.carried ?? []), ...held];
  }

  /**
   * The statement that carried the taken events answered (`written`: done) or failed: held again,
   * published at the check phase unless the next write takes them (the step end sent again).
   */
  settle(written: boolean): void {
    const carried = this.carried;
    if (!carried) return;
    this.carried = undefined;
    if (!written) this.later([...carried, ...(this.held ?? [])]);
  }

  private later(held: SessionEventWrite[]): void {
    this.held = held;
    setImmediate(() => {
      if (this.held === held) this.publish();
    });
  }
}
