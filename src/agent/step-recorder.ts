/**
 * Records one model step as it streams: the assistant message (reasoning, text, tool calls) and
 * the tool message (results). Deltas go on the bus at once and reach the database at most every
 * FLUSH_MS; a tool call and a tool result are written immediately, and everything at the step's
 * end, so a crash loses at most a few milliseconds of streamed text. On PostgreSQL an assistant
 * message that opens with a tool call is written with that call's `tool.started` (`startCall`),
 * or, when that call only reads (p-heldstep, `deferStart`), by the step end's statement, already
 * closed, with the call's start and result: nothing of the step is written before its end.
 * @module
 */

import type { Message, MessagePart, ProviderMetadata, Usage } from '../sessions/session-store';
import type { MessagePatch, SessionEventWrite, StepCloseCreated, StepCloseOpened } from '../sessions/types';
import { type FollowingWrite, withRiding } from '../store/preceding-write';
import type { AgentHost } from './deps';
import type { TakenEvents } from './held-event';
import { INTERRUPTED_RESULT } from './history';
import {
  addResult,
  closingUpdates,
  type HeldResult,
  heldToolMessage,
  orderedResults,
  stepCompletions,
} from './step-held-result';
import {
  appendCreated,
  appendToolMessage,
  type CallStart,
  type FinishedWrite,
  type RecordedToolCall,
  type StepRecorderOptions,
} from './step-message-writes';

export type { CallStart, FinishedWrite, RecordedToolCall, StepRecorderOptions };

const FLUSH_MS = 50;

export class StepRecorder {
  private assistant: Message | undefined;
  private readonly parts: MessagePart[] = [];
  private tool: Message | undefined;
  /** Set by the first caller; the others await it (the stores' appends are async). */
  private assistantCreated: Promise<void> | undefined;
  private toolCreated: Promise<Message> | undefined;
  private readonly results: MessagePart[] = [];
  private openText: { id: string; index: number } | undefined;
  private openReasoning: { id: string; index: number } | undefined;
  private dirty = false;
  /** Deltas waiting for the assistant message to be created (later ones wait behind them). */
  private deltasWaiting = 0;
  /**
   * What the store holds: the assistant's parts as of change `partsWritten` (of `partsChanged`
   * so far), the tool message's first `resultsWritten` results in arrival order. The step's end
   * leaves out what is stored already, rather than encoding it again.
   */
  private partsChanged = 0;
  private partsWritten = -1;
  private resultsWritten = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The step's only result, held for the step end (`heldClose`) or `releaseTool` (p-pgtoolend). */
  private heldResult: HeldResult | undefined;
  /**
   * The step's only call's start held with its assistant message for the step end (p-heldstep):
   * written by the step end's statement (`heldOpen`), or alone first (`release`) by whatever needs
   * it earlier; `at`: when the call was recorded (the message's `created_at`).
   */
  private deferred: { start: CallStart; at: number } | undefined;
  /**
   * A text step's assistant message held (p-heldstep, `holdsText`): its id (its deltas' events
   * name it), when its first part came, its deltas' events not yet published. Written by the step
   * end's statement, or alone (`releaseText`) once FLUSH_MS passed (`flush`) or anything needs it.
   */
  private heldText: { id: string; at: number; events: SessionEventWrite[] } | undefined;
  /** The held message as the step end's statement took it (`heldOpen`), until it answered. */
  private opening:
    | {
        deferred?: { start: CallStart; at: number };
        text?: { id: string; at: number; events: SessionEventWrite[] };
        taken: TakenEvents | undefined;
        opened: StepCloseOpened;
        /** The session events after its `message.created`: the call's start, or the held deltas. */
        events: SessionEventWrite[];
      }
    | undefined;
  readonly toolCalls: RecordedToolCall[] = [];

  constructor(
    private readonly app: AgentHost,
    private readonly options: StepRecorderOptions,
  ) {}

  get assistantId(): string | undefined {
    return this.assistant?.id;
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
    return this.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
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

  /** Records a call once (the tool may start before the stream's part arrives); metadata merges. */
  async toolCall(call: RecordedToolCall, metadata?: ProviderMetadata): Promise<void> {
    // A held text goes first, as it was written (its deltas' events before the call's).
    if (this.heldText) await this.releaseText(false);
    // Another call after a held result: the result's message and `tool.finished` go first.
    if (this.heldResult && !this.toolCalls.some((c) => c.tool_call_id === call.tool_call_id))
      await this.releaseTool();
    // The step's first part: the assistant message is created holding the call (one write, where
    // an empty message and then an update were two). A concurrent second report of the call
    // awaits the same creation and finds the call recorded.
    if (!this.assistantCreated) {
      this.addCall(call, metadata);
      // Held (p-pgride): written with the first tool's start or by the next write that needs it.
      if (this.options.holdsCall) return;
      await this.ensureAssistant();
      return;
    }
    // The tool's start and the stream's part record the same call concurrently: the message
    // first, then the check and the push with no await between them, so the call is pushed once.
    await this.ensureAssistant();
    if (!this.addCall(call, metadata)) return;
    this.dirty = true;
    await this.flush();
  }

  /** Adds the call to the parts, or merges the metadata of a known one; false: nothing changed. */
  private addCall(call: RecordedToolCall, metadata?: ProviderMetadata): boolean {
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

  async toolResult(toolCallId: string, tool: string, output: string, isError: boolean): Promise<void> {
    // The stream's part of a result recorded already (held or written): nothing to write.
    if (this.results.some((r) => r.type === 'tool-result' && r.tool_call_id === toolCallId)) return;
    const releasing = this.release();
    if (releasing) await releasing;
    await this.releaseTool();
    if (this.options.handedOver?.() || !addResult(this.results, toolCallId, tool, output, isError)) return;
    // Results of parallel calls arrive concurrently: one creates the message, the others wait
    // for it and then write every result so far.
    if (!this.toolCreated) {
      this.toolCreated = this.createTool().catch((error: unknown) => {
        this.toolCreated = undefined; // the next result tries again
        throw error;
      });
      await this.toolCreated;
      return;
    }
    const message = await this.toolCreated;
    await this.writeResults(message.id);
  }

  /**
   * A call's result recorded by the tool's bridge as the call finishes, with its `tool.finished`
   * in the tool message's INSERT (PostgreSQL, p-pgstep7): one statement where the event and the
   * message were two, and the message a moment earlier than the stream's part would write it (the
   * part then finds the result recorded). Only the step's first result, which creates the message:
   * false, and nothing recorded, when the message is made or being made already (a later result
   * is an UPDATE: its event is written alone, as before), the run is handed over, or the statement
   * failed (the stream's part records the result, as before). `'held'` (`holdsResult`): the
   * step's only call's result, held with its `tool.finished` for the step end (p-pgtoolend).
   */
  async finishedResult(
    result: { tool_call_id: string; tool: string; output: string; isError: boolean },
    finished: FinishedWrite,
  ): Promise<boolean | 'held'> {
    // A start held for the step end (p-heldstep) stays held when the result is held too.
    if (!this.deferred || !this.holdsFirst()) {
      const releasing = this.release();
      if (releasing) await releasing;
    }
    if (this.toolCreated || this.heldResult || !this.app.sessions.appendAnnounced) return false;
    if (this.options.handedOver?.()) return false;
    const part = addResult(this.results, result.tool_call_id, result.tool, result.output, result.isError);
    if (!part) return false;
    if (this.options.holdsResult && this.toolCalls.length === 1 && this.results.length === 1) {
      this.heldResult = { finished };
      return 'held';
    }
    const created = this.createTool(finished);
    this.toolCreated = created.catch((error: unknown) => {
      this.toolCreated = undefined; // the next result tries again
      const at = this.results.indexOf(part);
      if (at !== -1) this.results.splice(at, 1); // the stream's part records it
      throw error;
    });
    try {
      await this.toolCreated;
      return true;
    } catch (error) {
      this.app.log.warn('tool result write failed', { run_id: this.options.runId, error });
      return false;
    }
  }

  /** Whether the step's first result would be held (`finishedResult`): its only call, nothing made yet. */
  private holdsFirst(): boolean {
    return (
      this.options.holdsResult === true &&
      this.toolCalls.length === 1 &&
      this.results.length === 0 &&
      !this.toolCreated &&
      !this.heldResult &&
      !this.options.handedOver?.()
    );
  }

  /**
   * The held result's message and `tool.finished` written alone now (undefined: none held), after
   * a start held for the step end (`deferStart`), written first. `ordered`: their session events
   * keep their places in the bus's queue at this call even when the bus is busy (a stop's release,
   * ./end-step.ts): both messages' appends are called now (their events joined or reserved now), the
   * result's statement sent once the start's answered (`after`). A failed statement holds them
   * again, as a failed step end does (`heldCloseFailed`): the next release (the cut step's) writes them.
   */
  releaseTool(ordered = false): Promise<unknown> | undefined {
    const starting = this.heldText
      ? this.releaseText(ordered)
      : this.deferred
        ? this.startDeferred(ordered)
        : undefined;
    const held = this.heldResult;
    if (!held || held.created) return starting;
    this.heldResult = undefined;
    this.toolCreated = this.createTool(held.finished, ordered, starting).catch((error: unknown) => {
      this.toolCreated = undefined;
      this.heldResult ??= held;
      throw error;
    });
    return this.toolCreated;
  }

  /** The held result's message for the step end's statement to insert (undefined: none held). */
  heldClose(): StepCloseCreated | undefined {
    const held = this.heldResult;
    if (!held) return undefined;
    const { runId } = this.options;
    held.created = { role: 'tool', parts: [...this.results], runId, following: held.finished.write };
    return held.created;
  }

  /** The step end's statement failed: the held result is held again, for `releaseTool`. */
  heldCloseFailed(): void {
    if (this.heldResult) this.heldResult.created = undefined;
  }

  /** Writes the results so far to the tool message. */
  private async writeResults(id: string) {
    const results = [...this.results];
    await this.app.sessions.updateMessage(id, { parts: results });
    this.resultsWritten = Math.max(this.resultsWritten, results.length);
  }

  private async createTool(
    finished?: FinishedWrite,
    ordered = false,
    after?: Promise<unknown>,
  ): Promise<Message> {
    const results = [...this.results];
    const tool = await appendToolMessage(this.app, this.options, results, finished, ordered, after);
    this.tool = tool;
    this.resultsWritten = Math.max(this.resultsWritten, results.length);
    return tool;
  }

  /**
   * A tool's start (`start`) written with the step's held assistant message, in its INSERT's
   * statement (p-pgride): one round trip where the message and the start were two back to back.
   * Undefined: the message was not held (written, being written, or never held): nothing written
   * here, the caller writes the start once the message is in. True: both written; false: the
   * message only (the run's row is gone: the caller logs the start's failure, as its own append
   * would). A failed statement throws, as the message's own write would, nothing written.
   */
  async startCall(start: CallStart): Promise<boolean | undefined> {
    const held = !this.assistantCreated && !this.deferred && this.options.holdsCall && this.parts.length > 0;
    const taken =
      held && this.app.sessions.appendAnnounced ? this.options.following?.([start.event]) : undefined;
    if (!taken) {
      await this.release();
      await this.releaseTool();
      return undefined;
    }
    const write = start.riding ? withRiding(taken.write, start.riding) : taken.write;
    this.assistantCreated = this.creating(
      this.createAssistant({ write, after: taken.after }, [start.announce]),
    );
    await this.assistantCreated;
    return taken.written();
  }

  /**
   * The call's start held with the step's assistant message for the step end's statement
   * (p-heldstep: a step whose only call only reads, ./run-bridge.ts): nothing written now; the
   * step end inserts the message closed with the start and the held result (`heldOpen`), unless
   * something needs the start earlier (`release`: an ask, an event, a stop, a later part). False:
   * not held (the message is written or being written, or the step has another call), the caller
   * writes the start as before.
   */
  deferStart(start: CallStart): boolean {
    if (this.assistantCreated || this.deferred || this.heldText || this.opening || !this.options.holdsCall)
      return false;
    if (this.parts.length === 0 || !this.holdsFirst() || !this.app.sessions.appendAnnounced) return false;
    this.deferred = { start, at: this.app.clock.now() };
    return true;
  }

  /** Whether the step end's statement is to write the step's held start (`deferStart`) with its held result. */
  opensAtEnd(): boolean {
    if (this.options.handedOver?.()) return false;
    if (this.heldText) return true;
    const held = this.heldResult;
    return this.deferred !== undefined && held !== undefined && !held.created;
  }

  /**
   * The step's assistant message for the step end's statement to insert closed, with its held
   * start's run events (the step's `phase`, the call's `tool.started`) following it (undefined: no
   * start held for it, `opensAtEnd`). Before `heldClose`.
   */
  heldOpen(usage: Usage | null, cost: number): StepCloseOpened | undefined {
    if (!this.opensAtEnd()) return undefined;
    const { runId, model, provider } = this.options;
    const text = this.heldText;
    if (text) {
      // The step's `phase` when one is held.
      const taken = this.options.following?.();
      this.heldText = undefined;
      const opened = {
        id: text.id,
        parts: [...this.parts],
        model,
        provider,
        usage,
        cost,
        runId,
        createdAt: text.at,
        ...(taken ? { following: taken.write } : {}),
      };
      this.opening = { text, taken, opened, events: text.events };
      return opened;
    }
    const deferred = this.deferred;
    if (!deferred) return undefined;
    const taken = this.options.following?.([deferred.start.event]);
    if (!taken) return undefined;
    this.deferred = undefined;
    const opened = {
      parts: [...this.parts],
      model,
      provider,
      usage,
      cost,
      runId,
      createdAt: deferred.at,
      following: taken.write,
    };
    this.opening = { deferred, taken, opened, events: [deferred.start.announce] };
    return opened;
  }

  /**
   * The step end's statement failed: a start it carried (`heldOpen`) is held again, for the parts'
   * writes (`releaseTool`); false: it carried none.
   */
  heldOpenFailed(): boolean {
    const opening = this.opening;
    if (!opening) return false;
    this.opening = undefined;
    opening.taken?.after(); // the step's `phase` held again
    this.deferred = opening.deferred;
    this.heldText = opening.text;
    return true;
  }

  /**
   * The held assistant message written now, alone (undefined: none held, nothing to wait for;
   * else the write, or the one under way): before anything that must follow it (a result, the
   * step's end). A start held for the step end (`deferStart`) is written with it.
   */
  release(): Promise<void> | undefined {
    if (this.assistant) return undefined;
    if (this.assistantCreated) return this.assistantCreated;
    if (this.heldText) return this.releaseText(false);
    if (this.deferred) return this.startDeferred(false);
    return this.parts.length > 0 ? this.ensureAssistant() : undefined;
  }

  /**
   * The held text's message written now with the parts so far, its `message.created` and its
   * deltas' events in its statement (`trailing`), the step's `phase` riding: as the message's
   * write at its first delta, its deltas' appends after it (one statement where they were two or
   * more). `ordered`: its events keep their places in the bus's queue at this call (a stop).
   */
  private releaseText(ordered: boolean): Promise<void> {
    const held = this.heldText as { id: string; at: number; events: SessionEventWrite[] };
    this.heldText = undefined;
    const changed = this.partsChanged;
    const creating = this.creating(this.createAssistant(undefined, held.events, ordered, held.id));
    this.assistantCreated = creating;
    const done = creating.then(() => {
      // Its parts as they are now: nothing more to flush.
      if (this.partsChanged === changed) this.dirty = false;
    });
    done.catch(() => {}); // handled by its awaiter
    return done;
  }

  /**
   * The held start (`deferStart`) written now with its assistant message, as `startCall` writes it
   * (the step's `phase`, its model call riding): its session events joined (or, `ordered`, reserved)
   * in this call. Failed: held again (the next release tries again).
   */
  private startDeferred(ordered: boolean): Promise<void> {
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

  /** Calls that never got a result (cancel, loop stop) get an error result, so history stays valid. */
  async closeDanglingCalls(reason = INTERRUPTED_RESULT): Promise<number> {
    if (this.options.handedOver?.()) return 0;
    let closed = 0;
    for (const call of this.toolCalls) {
      if (this.results.some((r) => r.type === 'tool-result' && r.tool_call_id === call.tool_call_id))
        continue;
      await this.toolResult(call.tool_call_id, call.tool, reason, true);
      closed++;
    }
    return closed;
  }

  /** Write everything and mark the step's messages finished. */
  async finish(usage: Usage | null, cost: number): Promise<void> {
    const updates = this.closing(usage, cost);
    if (!updates) {
      await this.flush(); // handed over: what the model wrote, unfinished
      return;
    }
    const sessions = this.app.sessions;
    // Both updates sent without awaiting each other (one round trip in a PostgreSQL transaction).
    await Promise.all(updates.map(({ id, patch }) => sessions.updateMessage(id, patch)));
    this.completed();
  }

  /**
   * The step's end as message updates (assistant, then tool), for the caller to write (`finish`,
   * or the store's `closeStep` with the session's usage), then `completed()`. Undefined once the
   * run is handed over: the step does not finish (the caller flushes what the model wrote).
   */
  closing(usage: Usage | null, cost: number): { id: string; patch: MessagePatch }[] | undefined {
    this.cancelTimer();
    if (this.options.handedOver?.()) return undefined;
    const ordered = orderedResults(this.results, this.toolCalls);
    return closingUpdates(
      this.assistant && {
        id: this.assistant.id,
        parts: this.parts,
        stored: this.partsWritten === this.partsChanged,
      },
      this.tool && {
        id: this.tool.id,
        parts: ordered,
        stored:
          this.resultsWritten === this.results.length && ordered.every((part, i) => part === this.results[i]),
      },
      usage,
      cost,
    );
  }

  /**
   * The step's updates are written: its completions (`completions`), together in message order
   * (one append on PostgreSQL), unless the step end's statement appended them (`announced`).
   */
  completed(announced = false): void {
    if (!announced)
      for (const { type, payload } of this.completions())
        this.app.bus.publish(this.options.sessionId, type, payload);
    const opening = this.opening;
    const openedId = opening?.opened.id;
    if (opening && openedId) {
      // Written by the step end's statement, closed (p-heldstep).
      this.opening = undefined;
      opening.taken?.after();
      const { opened } = opening;
      const now = this.app.clock.now();
      this.assistant = {
        id: openedId,
        session_id: this.options.sessionId,
        role: 'assistant',
        parts: [...opened.parts],
        model: opened.model,
        provider: opened.provider,
        usage: opened.usage,
        cost: opened.cost,
        run_id: opened.runId,
        created_at: opened.createdAt,
        updated_at: now,
        finished_at: now,
      };
      this.partsWritten = this.partsChanged;
    }
    const id = this.heldResult?.created?.id;
    if (id) {
      // Written by the step end's statement, finished.
      this.heldResult = undefined;
      const { sessionId, runId } = this.options;
      this.tool = heldToolMessage(id, sessionId, runId, [...this.results], this.app.clock.now());
      this.resultsWritten = this.results.length;
    }
    this.dirty = false;
  }

  /** The step's `message.completed` events, in message order (`stepCompletions`). */
  completions(): { type: string; payload: Record<string, unknown> }[] {
    const { sessionId, runId } = this.options;
    const id = this.opening?.opened.id;
    const opened = id ? { id, events: this.opening?.events ?? [] } : undefined;
    return stepCompletions(sessionId, runId, this.assistant?.id, this.tool?.id, this.heldResult, opened);
  }

  async flush(): Promise<void> {
    this.cancelTimer();
    // A held text past its bound (FLUSH_MS), or needed: written now, as at its first delta.
    if (this.heldText) {
      await this.releaseText(false);
      return;
    }
    if (!this.dirty || !this.assistant) return;
    this.dirty = false;
    const changed = this.partsChanged;
    await this.app.sessions.updateMessage(this.assistant.id, { parts: [...this.parts] });
    this.partsWritten = Math.max(this.partsWritten, changed);
  }

  private delta(
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
    this.recordDelta(kind, id, delta, metadata);
    return undefined;
  }

  private async deltaAfterMessage(
    kind: 'text' | 'reasoning',
    id: string,
    delta: string,
    metadata?: ProviderMetadata,
  ): Promise<void> {
    this.deltasWaiting++;
    try {
      await this.ensureAssistant();
    } finally {
      this.deltasWaiting--;
    }
    this.recordDelta(kind, id, delta, metadata);
  }

  /**
   * Whether a delta goes to the held text (`heldText`, made at the step's first part when the
   * recorder holds text: nothing written or held before it).
   */
  private holdingText(): boolean {
    if (this.heldText) return true;
    if (!this.options.holdsText || this.assistantCreated || this.deferred || this.opening) return false;
    if (this.parts.length > 0 || this.deltasWaiting > 0) return false;
    this.heldText = { id: this.app.ids.next('msg'), at: this.app.clock.now(), events: [] };
    return true;
  }

  private recordDelta(kind: 'text' | 'reasoning', id: string, delta: string, metadata?: ProviderMetadata) {
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
    if (delta) {
      const held = this.heldText;
      const payload = {
        session_id: this.options.sessionId,
        message_id: held ? held.id : this.assistant!.id,
        run_id: this.options.runId,
        part: kind,
        delta,
      };
      // Held with the message: its statement appends them after its `message.created`.
      if (held) held.events.push({ type: 'message.delta', payload });
      else this.app.bus.publish(this.options.sessionId, 'message.delta', payload);
    }
    this.schedule();
  }

  /** The assistant message, created once however many callers ask at the same time. */
  private async ensureAssistant() {
    if (!this.assistantCreated && this.heldText) await this.releaseText(false);
    // A start held for the step end (`deferStart`) is written with the message.
    if (!this.assistantCreated && this.deferred) await this.startDeferred(false);
    this.assistantCreated ??= this.creating(this.createAssistant());
    await this.assistantCreated;
  }

  /** The assistant message's write; failed, the next part tries again. */
  private creating(write: Promise<void>): Promise<void> {
    return write.catch((error: unknown) => {
      this.assistantCreated = undefined;
      throw error;
    });
  }

  private async createAssistant(
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

  private schedule() {
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

  private cancelTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
