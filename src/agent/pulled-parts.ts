/**
 * A pushed stream of parts read as an async iterable. svc's step driver (./step-driver.ts) hands
 * each part to a sink and waits only for the promise the sink answers (the run's recorder waits
 * on a few parts a step); a reader that wants `for await` gets this iterator over the same drive:
 * the driver waits for the reader's next `next()` after every part, as a generator waits at its
 * `yield`; the reader's `return()` (a `break`, a throw in its loop) ends the drive from the part
 * it is at, the driver's `finally`s run (the model's stream cancelled) before `return()` answers.
 * @module
 */

/** Where a driver hands its parts: a promise when the driver is to wait before the next one. */
export type PartSink<T> = (part: T) => Promise<void> | undefined;

/** A drive: the parts handed to `sink` in order, the promise settled when the drive ends. */
export type Drive<T> = (sink: PartSink<T>) => Promise<void>;

/** Why a pulled drive stops: its reader returned (not an error the reader sees). */
const READER_RETURNED = Symbol('reader returned');

/** The parts of `drive` as an async iterable, each part waiting for the reader's next `next()`. */
export function pulled<T>(drive: Drive<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => new PulledParts(drive) };
}

class PulledParts<T> implements AsyncIterator<T, undefined> {
  /** The reader's pending `next()`. */
  private reader?: { resolve(result: IteratorResult<T, undefined>): void; reject(error: unknown): void };
  /** The driver waiting after a part, resumed by the next `next()`, stopped by `return()`. */
  private driver?: { resume(): void; stop(reason: unknown): void };
  private running?: Promise<void>;
  private done = false;

  constructor(private readonly drive: Drive<T>) {}

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.done) return Promise.resolve({ done: true, value: undefined });
    const answer = new Promise<IteratorResult<T, undefined>>((resolve, reject) => {
      this.reader = { resolve, reject };
    });
    const driver = this.driver;
    this.driver = undefined;
    if (driver) driver.resume();
    else if (!this.running)
      this.running = this.drive((part) => this.hand(part)).then(
        () => this.end(),
        (error: unknown) => (error === READER_RETURNED ? this.end() : this.end(error, true)),
      );
    return answer;
  }

  async return(): Promise<IteratorResult<T, undefined>> {
    const driver = this.driver;
    this.driver = undefined;
    if (!this.done && driver) {
      driver.stop(READER_RETURNED);
      await this.running;
    }
    this.done = true;
    return { done: true, value: undefined };
  }

  private hand(part: T): Promise<void> {
    const reader = this.reader;
    this.reader = undefined;
    const waiting = new Promise<void>((resume, stop) => {
      this.driver = { resume, stop };
    });
    reader?.resolve({ done: false, value: part });
    return waiting;
  }

  /** The drive ended: the reader's pending `next()` answers done, or the drive's error. */
  private end(error?: unknown, failed = false): void {
    this.done = true;
    const reader = this.reader;
    this.reader = undefined;
    if (failed) reader?.reject(error);
    else reader?.resolve({ done: true, value: undefined });
  }
}
