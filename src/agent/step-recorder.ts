/**
 * Records one model step as it streams: the assistant message (reasoning, text, tool calls) and
 * the tool message (results). Deltas go on the bus at once and reach the database at most every
 * FLUSH_MS; a tool call and a tool result are written immediately, and everything at the step's
 * end, so a crash loses at most a few milliseconds of streamed text. On PostgreSQL an assistant
 * message that opens with a tool call is written with that call's `tool.started` (`startCall`),
 * or, when that call only reads (p-heldstep, `deferStart`), by the step end's statement, already
 * closed, with the call's start and result: nothing of the step is written before its end; a text
 * step's message likewise, unless FLUSH_MS passes first. The state and the message writes:
 * ./step-recorder-core.ts.
 * @module
 */

import type { ProviderMetadata, Usage } from '../sessions/session-store';
import type { MessagePatch, StepCloseCreated, StepCloseOpened } from '../sessions/types';
import { withRiding } from '../store/preceding-write';
import { INTERRUPTED_RESULT } from './history';
import {
  addResult,
  callOf,
  closingUpdates,
  heldToolMessage,
  heldToolWrite,
  laterEvents,
  orderedResults,
  stepCompletions,
} from './step-held-result';
import type { CallStart, FinishedWrite, RecordedToolCall, StepRecorderOptions } from './step-message-writes';
import { StepRecorderCore } from './step-recorder-core';

export type { CallStart, FinishedWrite, RecordedToolCall, StepRecorderOptions };

export class StepRecorder extends StepRecorderCore {
  /** Records a call once (the tool may start before the stream's part arrives); metadata merges. */
  async toolCall(call: RecordedToolCall, metadata?: ProviderMetadata): Promise<void> {
    // The read's held deltas go first, as they were published (p-pgtail).
    this.publishTail();
    // A held text goes first, as it was written (its deltas' events before the call's).
    if (this.heldText) await this.releaseText();
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

  async toolResult(toolCallId: string, tool: string, output: string, isError: boolean): Promise<void> {
    // The stream's part of a result recorded already (held or written): nothing to write.
    if (this.results.some((r) => r.type === 'tool-result' && r.tool_call_id === toolCallId)) return;
    this.publishTail();
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
    // A start held for the step end (p-heldstep) stays held when the result is held too (the step's
    // first call's, or a later call's held with it: p-heldmulti).
    const holding = this.holdsResultOf(result.tool_call_id);
    if (!holding) {
      const releasing = this.heldResult ? this.releaseTool() : this.release();
      if (releasing) await releasing;
    }
    if (this.toolCreated || (this.heldResult && !holding) || !this.app.sessions.appendAnnounced) return false;
    if (this.options.handedOver?.()) return false;
    const part = addResult(this.results, result.tool_call_id, result.tool, result.output, result.isError);
    if (!part) return false;
    if (holding) {
      const later = this.heldAfter.at(-1);
      if (later) later.finished = finished;
      else this.heldResult = { finished };
      return 'held';
    }
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

  /** Whether the step's first call's start may be held (`deferStart`): its result would be too, nothing made yet. */
  private holdsFirst(): boolean {
    return (
      this.options.holdsResult === true &&
      this.toolCalls.length >= 1 &&
      this.results.length === 0 &&
      !this.toolCreated &&
      !this.heldResult &&
      !this.options.handedOver?.()
    );
  }

  /**
   * Whether a later call's start may be held with the step's first (p-heldmulti): the calls before
   * it held with their results (they run one after another), no tool message made or taken.
   */
  private holdsNext(): boolean {
    return (
      this.deferred !== undefined &&
      this.heldResult !== undefined &&
      !this.heldResult.created &&
      !this.toolCreated &&
      this.app.runs.followingEvents !== undefined &&
      this.laterCallsDone() &&
      !this.options.handedOver?.()
    );
  }

  /** Whether every later call held with the step's first has its result (p-heldmulti). */
  private laterCallsDone(): boolean {
    return this.heldAfter.every((later) => later.finished !== undefined);
  }

  /** Whether the call's result is held (`finishedResult`): its start is the step's last one held, with no result yet. */
  private holdsResultOf(toolCallId: string): boolean {
    if (!this.options.holdsResult || this.toolCreated || this.options.handedOver?.()) return false;
    const later = this.heldAfter.at(-1);
    if (later) return !later.finished && callOf(later.start) === toolCallId;
    const first = this.deferred;
    return (
      first !== undefined &&
      !this.heldResult &&
      this.results.length === 0 &&
      callOf(first.start) === toolCallId
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
    // The read's held deltas first (p-pgtail): a stop's `cancelling` follows them, as on SQLite.
    this.publishTail();
    const starting = this.heldText
      ? this.releaseText()
      : this.deferred
        ? this.startDeferred(ordered)
        : undefined;
    const held = this.heldResult;
    if (!held || held.created) return starting;
    this.heldResult = undefined;
    // The step's later calls held with it (p-heldmulti): their events in the tool message's statement.
    const later = this.heldAfter.splice(0);
    const { write, trailing } = heldToolWrite(this.app, this.options.runId, held, later, false);
    this.toolCreated = this.createTool(write, ordered, starting, trailing).catch((error: unknown) => {
      this.toolCreated = undefined;
      if (!this.heldResult) {
        this.heldResult = held;
        this.heldAfter.push(...later);
      }
      throw error;
    });
    return this.toolCreated;
  }

  /**
   * A held call's start written on demand (its ask, its event, its `tool.finished` alone: the bridge's
   * `deferStart`): with everything of the step held before it (the calls before it, p-heldmulti,
   * `releaseTool`), or, released already by a stop, once that release's writes answered (the
   * call's own write after them, its run event's seq after theirs). Rejects with their error.
   */
  async writeHeld(): Promise<void> {
    await (this.releaseTool() ?? this.assistantCreated);
    if (this.toolCreated) await this.toolCreated;
  }

  /** The held result's message for the step end's statement to insert (undefined: none held). */
  heldClose(): StepCloseCreated | undefined {
    const held = this.heldResult;
    if (!held) return undefined;
    const { runId } = this.options;
    const { write, trailing } = heldToolWrite(
      this.app,
      this.options.runId,
      held,
      this.heldAfter,
      this.opening?.later === true,
    );
    held.created = { role: 'tool', parts: [...this.results], runId, following: write.write };
    held.trailing = trailing;
    return held.created;
  }

  /** The step end's statement failed: the held result is held again, for `releaseTool`. */
  heldCloseFailed(): void {
    // The read's deltas it carried held again (p-pgtail).
    this.tail.settle(false);
    if (!this.heldResult) return;
    this.heldResult.created = undefined;
    this.heldResult.trailing = undefined;
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
    if (this.assistantCreated || this.heldText || this.opening || !this.options.holdsCall) return false;
    if (this.parts.length === 0 || !this.app.sessions.appendAnnounced) return false;
    if (this.deferred) {
      // A later call of the step, held with the first (p-heldmulti).
      if (!this.holdsNext()) return false;
      this.heldAfter.push({ start });
      return true;
    }
    if (!this.holdsFirst()) return false;
    this.deferred = { start, at: this.app.clock.now() };
    return true;
  }

  /** Whether the step end's statement is to write the step's held start (`deferStart`) with its held result. */
  opensAtEnd(): boolean {
    if (this.options.handedOver?.()) return false;
    if (this.heldText) return true;
    const held = this.heldResult;
    return this.deferred !== undefined && held !== undefined && !held.created && this.laterCallsDone();
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
    // The step's later calls (p-heldmulti): the first's result and their events but the last
    // result's follow the start, one write; the last result's follows the tool message (`heldClose`).
    const first = this.heldResult?.finished.event;
    const later =
      first && this.heldAfter.length > 0 ? [first, ...laterEvents(this.heldAfter).slice(0, -1)] : [];
    const taken = this.options.following?.([deferred.start.event, ...later]);
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
    this.opening = { deferred, taken, opened, events: [deferred.start.announce], later: later.length > 0 };
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
    if (this.heldText) return this.releaseText();
    if (this.deferred) return this.startDeferred(false);
    return this.parts.length > 0 ? this.ensureAssistant() : undefined;
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
    // The last read's deltas ride in the step end's statement, before `message.completed` (p-pgtail).
    this.tail.take();
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
    this.tail.settle(true);
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
      this.heldAfter.splice(0);
    }
    this.dirty = false;
  }

  /** The step's `message.completed` events, in message order (`stepCompletions`). */
  completions(): { type: string; payload: Record<string, unknown> }[] {
    const { sessionId, runId } = this.options;
    const id = this.opening?.opened.id;
    const opened = id ? { id, events: this.opening?.events ?? [] } : undefined;
    const events = stepCompletions(
      sessionId,
      runId,
      this.assistant?.id,
      this.tool?.id,
      this.heldResult,
      opened,
    );
    // The last read's deltas taken by the step end (p-pgtail; a text step: nothing else before them).
    return this.tail.taken ? [...this.tail.taken, ...events] : events;
  }
}
