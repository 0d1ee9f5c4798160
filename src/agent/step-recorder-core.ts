/**
 * The state of a step's recorder (./step-recorder.ts) and its message writes: the assistant
 * message's parts as they stream (deltas, calls), its creation (alone, with a held start, or with
 * a held text and its deltas' events: p-heldstep), its flushes every FLUSH_MS, the tool message's
 * creation and its results.
 * @module
 */

import type { Message, MessagePart, ProviderMetadata } from '../sessions/session-store';
import type { SessionEventWrite, StepCloseOpened } from '../sessions/types';
import { type FollowingWrite, withRiding } from '../store/preceding-write';
import type { AgentHost } from './deps';
import type { TakenEvents } from './held-event';
import { ReadTail } from './read-tail';
import { type HeldLater, type HeldResult, orderedResults } from './step-held-result';
import {
  appendCreated,
  appendToolMessage,
  type CallStart,
  type FinishedWrite,
  type RecordedToolCall,
  type StepRecorderOptions,
} from './step-message-writes';

/** The bound of a delta's way to the database (a held text's: the end of its read, p-pgcompat7). */
const FLUSH_MS = 50;

export abstract class StepRecorderCore {
  protected assistant: Message | undefined;
  protected readonly parts: MessagePart[] = [];
  protected tool: Message | undefined;
  /** Set by the first caller; the others await it (the stores' appends are async). */
  protected assistantCreated: Promise<void> | undefined;
  protected toolCreated: Promise<Message> | undefined;
  protected readonly results: MessagePart[] = [];
  protected openText: { id: string; index: number } | undefined;
  protected openReasoning: { id: string; index: number } | undefined;
  protected dirty = false;
  /** Deltas waiting for the assistant message to be created (later ones wait behind them). */
  protected deltasWaiting = 0;
  /**
   * What the store holds: the assistant's parts as of change `partsWritten` (of `partsChanged`
   * so far), the tool message's first `resultsWritten` results in arrival order. The step's end
   * leaves out what is stored already, rather than encoding it again.
   */
  protected partsChanged = 0;
  protected partsWritten = -1;
  protected resultsWritten = 0;
  protected timer: NodeJS.Timeout | undefined;
  /** The step's only result, held for the step end (`heldClose`) or `releaseTool` (p-pgtoolend). */
  protected heldResult: HeldResult | undefined;
  /**
   * The step's only call's start held with its assistant message for the step end (p-heldstep):
   * written by the step end's statement (`heldOpen`), or alone first (`release`) by whatever needs
   * it earlier; `at`: when the call was recorded (the message's `created_at`).
   */
  protected deferred: { start: CallStart; at: number } | undefined;
  /**
   * The step's later calls held with its first (p-heldmulti: a step whose calls all only read, run
   * one after another): each call's start, then its result's `tool.finished` once it came, in call
   * order. Written after the first call's result, in its tool message's statement (its run events
   * there, its session events after that message's `message.created`): by the step end's statement,
   * or by whatever releases the held step (`releaseTool`).
   */
  protected heldAfter: HeldLater[] = [];
  /**
   * A text step's assistant message held (p-heldstep, `holdsText`): its id (its deltas' events
   * name it), when its first part came, its deltas' events not yet published. Written by the step
   * end's statement, or alone (`releaseText`) once the read that brought it is done without the
   * step's end (`flush` at the check phase), or anything needs it.
   */
  protected heldText: { id: string; at: number; events: SessionEventWrite[] } | undefined;
  /** The held text's id while its release (`releaseText`) is in flight: deltas then wait behind it. */
  protected releasing: string | undefined;
  /** The read's deltas once the message is written, held until the read is done or the step end (p-pgtail). */
  protected readonly tail: ReadTail;
  /** The held message as the step end's statement took it (`heldOpen`), until it answered. */
  protected opening:
    | {
        deferred?: { start: CallStart; at: number };
        text?: { id: string; at: number; events: SessionEventWrite[] };
        taken: TakenEvents | undefined;
        opened: StepCloseOpened;
        /** The session events after its `message.created`: the call's start, or the held deltas. */
        events: SessionEventWrite[];
        /** Its following write took the step's later calls' events (p-heldmulti) but the last result's. */
        later?: boolean;
      }
    | undefined;
  readonly toolCalls: RecordedToolCall[] = [];

  constructor(
    protected readonly app: AgentHost,
    protected readonly options: StepRecorderOptions,
  ) {
    this.tail = new ReadTail(({ type, payload }) => app.bus.publish(options.sessionId, type, payload));
  }

  /** Also of a text held for the step end (p-heldstep: its id made at its first delta), written or not. */
  get assistantId(): string | undefined {
    return this.assistant?.id ?? this.heldText?.id ?? this.opening?.text?.id;
  }

  /** The step's messages as stored (assistant, then tool results). */
  messages(): Message[] {
    const out: Message[] = [];
    if (this.assistant) out.push({ ...this.assistant, parts: [...this.parts] });
    if (this.tool) out.push({ ...this.tool, parts: orderedResults(this.results, this.toolCalls) });
    return out;
  }

  /** The text the model wrote in this step. */
  get text(): string {
    // Concatenated, not `map(…).join('')`: TurboFan's inlined `map` answers a holey array the
    // builtin's feedback never saw, a deopt at the first optimized call (p-deopt).
    let text = '';
    for (const p of this.parts) if (p.type === 'text') text += p.text;
    return text;
  }

  /** Undefined when the delta is recorded already (the message exists): nothing to wait for. */
  textDelta(id: string, delta: string, metadata?: ProviderMetadata): Promise<void> | undefined {
    return this.delta('text', id, delta, metadata);
  }

  reasoningDelta(id: string, delta: string, metadata?: ProviderMetadata): Promise<void> | undefined {
    return this.delta('reasoning', id, delta, metadata);
  }

  /** Provider metadata that arrives at the end of a part (e.g. a reasoning signature). */
  partMetadata(kind: 'text' | 'reasoning', id: string, metadata: ProviderMetadata | undefined): void {
    const open = kind === 'text' ? this.openText : this.openReasoning;
    if (!metadata || !open || open.id !== id) return;
    const part = this.parts[open.index] as { provider_metadata?: ProviderMetadata };
    part.provider_metadata = { ...part.provider_metadata, ...metadata };
    this.schedule();
  }

  /** Adds the call to the parts, or merges the metadata of a known one; false: nothing changed. */
  protected addCall(call: RecordedToolCall, metadata?: ProviderMetadata): boolean {
    const known = this.parts.find(
      (p): p is Extract<typeof p, { type: 'tool-call' }> =>
        p.type === 'tool-call' && p.tool_call_id === call.tool_call_id,
    );
    if (known) {
      if (!metadata) return false;
      known.provider_metadata = { ...known.provider_metadata, ...metadata };
      this.partsChanged++;
      return true;
    }
    this.openText = undefined;
    this.openReasoning = undefined;
    this.parts.push({
      type: 'tool-call',
      tool_call_id: call.tool_call_id,
      tool: call.tool,
      input: call.input,
      ...(metadata ? { provider_metadata: metadata } : {}),
    });
    this.toolCalls.push(call);
    this.partsChanged++;
    return true;
  }

  /** Writes the results so far to the tool message. */
  protected async writeResults(id: string) {
    const results = [...this.results];
    await this.app.sessions.updateMessage(id, { parts: results });
    this.resultsWritten = Math.max(this.resultsWritten, results.length);
  }

  protected async createTool(
    finished?: Pick<FinishedWrite, 'write' | 'events'>,
    ordered = false,
    after?: Promise<unknown>,
    trailing?: readonly SessionEventWrite[],
  ): Promise<Message> {
    const results = [...this.results];
    const tool = await appendToolMessage(this.app, this.options, results, finished, ordered, after, trailing);
    this.tool = tool;
    this.resultsWritten = Math.max(this.resultsWritten, results.length);
    return tool;
  }

  /**
   * The held text's message written now with the parts so far, its `message.created` and its
   * deltas' events in its statement (`trailing`), the step's `phase` riding: as the message's
   * write at its first delta, its deltas' appends after it (one statement where they were two or
   * more). Its events keep their places in the bus's queue at this call even when the bus is busy
   * (`ordered`): they were the first delta's, so a stop's `state.changed` or a call's events
   * published while the statement is in flight follow them, as on SQLite (STORE-PG-572, 905).
   */
  protected releaseText(): Promise<void> {
    const held = this.heldText as { id: string; at: number; events: SessionEventWrite[] };
    this.heldText = undefined;
    const changed = this.partsChanged;
    this.releasing = held.id;
    const creating = this.creating(this.createAssistant(undefined, held.events, true, held.id));
    this.assistantCreated = creating;
    const done = creating.then(
      () => {
        this.releasing = undefined;
        // Its parts as they are now: nothing more to flush.
        if (this.partsChanged === changed) this.dirty = false;
      },
      (error: unknown) => {
        this.releasing = undefined;
        // Nothing of it written: held again, with its deltas' events (the step end or the next
        // release writes them), as a failed step end holds its start again (p-pgcompat7).
        if (!this.assistant && !this.assistantCreated) this.heldText ??= held;
        throw error;
      },
    );
    done.catch(() => {}); // handled by its awaiter
    return done;
  }

  /**
   * The held start (`deferStart`) written now with its assistant message, as `startCall` writes it
   * (the step's `phase`, its model call riding): its session events joined (or, `ordered`, reserved)
   * in this call. Failed: held again (the next release tries again).
   */
  protected startDeferred(ordered: boolean): Promise<void> {
    const deferred = this.deferred as { start: CallStart; at: number };
    this.deferred = undefined;
    const { start } = deferred;
    const call = this.options.takeCall?.();
    const taken = this.options.following?.([start.event]);
    const write = taken && (call ? withRiding(taken.write, call.insert) : taken.write);
    const creating = this.creating(
      this.createAssistant(
        write && taken ? { write, after: taken.after } : undefined,
        write ? [start.announce] : undefined,
        ordered,
      ),
    );
    this.assistantCreated = creating;
    const done = creating
      .then(
        () => {
          if (!taken?.written())
            this.app.log.warn('run ledger append failed', {
              run_id: this.options.runId,
              type: 'tool.started',
            });
        },
        (error: unknown) => {
          this.deferred ??= deferred;
          throw error;
        },
      )
      .finally(() => call?.after());
    done.catch(() => {}); // handled by its awaiter
    return done;
  }

  async flush(): Promise<void> {
    this.cancelTimer();
    this.publishTail();
    // A held text past its bound (FLUSH_MS), or needed: written now, as at its first delta.
    if (this.heldText) {
      await this.releaseText();
      return;
    }
    if (!this.dirty || !this.assistant) return;
    this.dirty = false;
    const changed = this.partsChanged;
    await this.app.sessions.updateMessage(this.assistant.id, { parts: [...this.parts] });
    this.partsWritten = Math.max(this.partsWritten, changed);
  }

  protected delta(
    kind: 'text' | 'reasoning',
    id: string,
    delta: string,
    metadata?: ProviderMetadata,
  ): Promise<void> | undefined {
    if (!delta && !metadata) return undefined;
    // Once the message exists and no earlier delta still waits for it, a delta is recorded at
    // once, with no promise (p-bus, p-compatcpu); before, each waits for the message, in call order.
    // A text step's message held for its step end records them at once too (p-heldstep).
    if ((!this.assistant || this.deltasWaiting > 0) && !this.holdingText())
      return this.deltaAfterMessage(kind, id, delta, metadata);
    this.recordDelta(kind, id, delta, metadata, false, true);
    return undefined;
  }

  protected async deltaAfterMessage(
    kind: 'text' | 'reasoning',
    id: string,
    delta: string,
    metadata?: ProviderMetadata,
  ): Promise<void> {
    this.deltasWaiting++;
    // Behind the held text's release in flight (p-pgcompat7): its event takes its place in the
    // bus's queue now, as if published at this call (so before a stop's `cancelling`, as on
    // SQLite), and is appended once the message is written; dropped if it is not.
    const releasing = this.releasing;
    const reserved =
      releasing && delta
        ? this.app.bus.reserve?.(this.options.sessionId, [
            { type: 'message.delta', payload: this.deltaPayload(releasing, kind, delta) },
          ])
        : undefined;
    let rejoined = false;
    try {
      await this.ensureAssistant();
    } catch (error) {
      reserved?.settle(false);
      // That release refused and its text held again (`releaseText`): the delta joins it.
      if (!releasing || this.heldText?.id !== releasing) throw error;
      rejoined = true;
    } finally {
      this.deltasWaiting--;
    }
    this.recordDelta(kind, id, delta, metadata, reserved !== undefined && !rejoined);
    if (!rejoined) reserved?.settle(true);
  }

  /**
   * Whether a delta goes to the held text (`heldText`, made at the step's first part when the
   * recorder holds text: nothing written or held before it).
   */
  protected holdingText(): boolean {
    if (this.heldText) return true;
    if (!this.options.holdsText || this.assistantCreated || this.deferred || this.opening) return false;
    if (this.parts.length > 0 || this.deltasWaiting > 0) return false;
    const held = { id: this.app.ids.next('msg'), at: this.app.clock.now(), events: [] };
    this.heldText = held;
    // Not taken by the step's end in the read that brought it (the model's answer goes on in a
    // later read): written once that read is done, so the client's first text waits for one round
    // trip, not for FLUSH_MS (p-pgcompat7). A whole answer in one read is still the step end's.
    setImmediate(() => {
      if (this.heldText !== held) return;
      this.flush().catch((error) => {
        this.app.log.warn('streamed message write failed', { error });
      });
    });
    return true;
  }

  /** A `message.delta` event's payload. */
  private deltaPayload(messageId: string, kind: 'text' | 'reasoning', delta: string) {
    return {
      session_id: this.options.sessionId,
      message_id: messageId,
      run_id: this.options.runId,
      part: kind,
      delta,
    };
  }

  /**
   * `announced`: its event is in the bus's queue already (reserved behind a release); `direct`: not
   * waited for a message (its event may go to the read's `tail`).
   */
  protected recordDelta(
    kind: 'text' | 'reasoning',
    id: string,
    delta: string,
    metadata?: ProviderMetadata,
    announced = false,
    direct = false,
  ) {
    const key = kind === 'text' ? 'openText' : 'openReasoning';
    let open = this[key];
    if (!open || open.id !== id) {
      this.parts.push({ type: kind, text: '' });
      open = { id, index: this.parts.length - 1 };
      this[key] = open;
    }
    const part = this.parts[open.index] as { text: string; provider_metadata?: ProviderMetadata };
    part.text += delta;
    if (metadata) part.provider_metadata = { ...part.provider_metadata, ...metadata };
    if (delta && !announced) {
      const held = this.heldText;
      const payload = this.deltaPayload(held ? held.id : this.assistant!.id, kind, delta);
      // Held with the message: its statement appends them after its `message.created`.
      if (held) held.events.push({ type: 'message.delta', payload });
      else if (direct && this.holdsTail()) this.tail.hold({ type: 'message.delta', payload });
      else {
        this.publishTail();
        this.app.bus.publish(this.options.sessionId, 'message.delta', payload);
      }
    }
    this.schedule();
  }

  /**
   * Whether a delta's event waits for its read's end (`tail`): a text step (no call recorded) whose
   * recorder holds text, its message written, no step end's statement carrying a tail already.
   */
  private holdsTail(): boolean {
    return (
      this.options.holdsText === true &&
      this.assistant !== undefined &&
      this.toolCalls.length === 0 &&
      this.tail.taken === undefined &&
      !this.options.handedOver?.()
    );
  }

  /** The read's held deltas published now (p-pgtail): before anything that must follow them. */
  publishTail(): void {
    this.tail.publish();
  }

  /** The assistant message, created once however many callers ask at the same time. */
  protected async ensureAssistant() {
    if (!this.assistantCreated && this.heldText) await this.releaseText();
    // A start held for the step end (`deferStart`) is written with the message.
    if (!this.assistantCreated && this.deferred) await this.startDeferred(false);
    this.assistantCreated ??= this.creating(this.createAssistant());
    await this.assistantCreated;
  }

  /** The assistant message's write; failed, the next part tries again. */
  protected creating(write: Promise<void>): Promise<void> {
    return write.catch((error: unknown) => {
      this.assistantCreated = undefined;
      throw error;
    });
  }

  protected async createAssistant(
    taken?: { write: FollowingWrite; after(): void },
    trailing?: readonly SessionEventWrite[],
    ordered = false,
    id?: string,
  ) {
    const changed = this.partsChanged;
    const following = taken ?? (this.app.sessions.appendAnnounced ? this.options.following?.() : undefined);
    try {
      this.assistant = await appendCreated(
        this.app,
        this.options.runId,
        {
          session_id: this.options.sessionId,
          role: 'assistant',
          // The parts so far: none for a delta (it adds its own after), the call for a tool call.
          parts: [...this.parts],
          model: this.options.model,
          provider: this.options.provider,
          run_id: this.options.runId,
          finished: false,
        },
        following?.write,
        undefined,
        trailing,
        ordered,
        undefined,
        id,
      );
    } finally {
      following?.after();
    }
    this.partsWritten = Math.max(this.partsWritten, changed);
  }

  protected schedule() {
    this.partsChanged++;
    this.dirty = true;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((error) => {
        this.app.log.warn('streamed message write failed', { error });
      });
    }, FLUSH_MS);
    this.timer.unref();
  }

  protected cancelTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
