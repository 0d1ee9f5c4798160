/**
 * The writes of a step's messages that carry other writes (./step-recorder.ts): a new message with
 * its `message.created`, and what rides in its statement on PostgreSQL (a run event following
 * it, session events before or after its own).
 * @module
 */
import type { Message } from '../sessions/session-store';
import type { SessionEventWrite } from '../sessions/types';
import type { FollowingWrite, TrailingInsert } from '../store/preceding-write';
import type { AgentHost } from './deps';
import type { Held, TakenEvents } from './held-event';

export interface RecordedToolCall {
  tool_call_id: string;
  tool: string;
  input: unknown;
}

export interface StepRecorderOptions {
  sessionId: string;
  runId: string;
  model: string;
  provider: string;
  /**
   * True once the run is handed over to another node (issue 19): from then on the step records no
   * result and does not finish, as if the node had died; the adopting node settles its calls.
   */
  handedOver?: () => boolean;
  /**
   * The run's held write for the step's first message statement (the step's `phase`,
   * ./held-event.ts): taken by the assistant message's INSERT, `after()` once it answered; with
   * `then`, those run events after it in the same write (`startCall`).
   */
  following?: (then?: readonly Held[]) => TakenEvents | undefined;
  /**
   * PostgreSQL (p-pgride): an assistant message whose first part is a tool call is held, not
   * written at the part, until its first tool starts (`startCall`: one statement with the call's
   * `tool.started`) or anything else needs it written (a delta, a result, the step's end: `release`).
   */
  holdsCall?: boolean;
  /**
   * PostgreSQL with a one-statement step end (p-pgtoolend): the step's only call's result is held
   * with its `tool.finished` and inserted by the step end's statement (`heldClose`), unless
   * anything needs it written earlier (`releaseTool`).
   */
  holdsResult?: boolean;
  /**
   * PostgreSQL with a one-statement step end (p-heldstep): a text step's assistant message is held
   * from its first delta, its deltas recorded at once and their events held with it, and written by
   * the step end's statement already closed, unless FLUSH_MS passes first or anything needs it.
   */
  holdsText?: boolean;
  /**
   * PostgreSQL (p-heldstep): the step's held model call (./held-calls.ts), taken to ride in its
   * deferred start's statement when something needs that start written before the step end.
   */
  takeCall?: () => { insert: TrailingInsert; after(): Promise<void> } | undefined;
}

/**
 * A tool call's start written with the step's held assistant message (`StepRecorder.startCall`):
 * its run event after the message's row (and the step's held `phase`), its session event right
 * after the message's `message.created`, and another domain's insert riding first (the step's
 * `model_calls` row, ./held-calls.ts).
 */
export interface CallStart {
  event: Held;
  announce: SessionEventWrite;
  riding?: TrailingInsert;
}

/**
 * A call's `tool.finished` for its result's message (p-pgstep7): the run event as a following
 * write, the session event published before the message's own; `event`, the run event itself (a
 * later call's result held with its step's first: one write with the step's other held events,
 * p-heldmulti).
 */
export interface FinishedWrite {
  write: FollowingWrite;
  events: readonly SessionEventWrite[];
  event: Held;
}

/**
 * A new message of the step and its `message.created` event: on PostgreSQL the event goes in the
 * message's own statement where the bus can keep its order (`appendAnnounced`), with `preceding`
 * and `trailing` events around it, else it is published once the message is written.
 */
export async function appendCreated(
  app: AgentHost,
  runId: string,
  input: Parameters<AgentHost['sessions']['appendMessage']>[0],
  following?: FollowingWrite,
  preceding?: readonly SessionEventWrite[],
  trailing?: readonly SessionEventWrite[],
  /** Its events keep their place in the bus's queue even when it is busy (`appendAnnounced`'s `ordered`). */
  ordered = false,
  /** Its statement sent once this settled, not at all when it rejected (`appendAnnounced`'s `after`). */
  after?: Promise<unknown>,
  /** Its id, made already (a held text's, its deltas' events name it: `appendAnnounced`'s `id`). */
  id?: string,
): Promise<Message> {
  const { sessions, bus } = app;
  const payload = (messageId: string) => ({
    session_id: input.session_id,
    message_id: messageId,
    role: input.role,
    run_id: runId,
  });
  if (sessions.appendAnnounced)
    return await sessions.appendAnnounced(
      input,
      'message.created',
      payload,
      following,
      preceding,
      trailing,
      ordered || after || id ? { ordered, ...(after ? { after } : {}), ...(id ? { id } : {}) } : undefined,
    );
  if (after) await after;
  const message = await sessions.appendMessage(input);
  bus.publish(input.session_id, 'message.created', payload(message.id));
  return message;
}

/**
 * The step's tool message with its results so far (unfinished), and the first result's
 * `tool.finished` when given; `trailing`, session events after its `message.created` (the step's
 * later calls held with it, p-heldmulti); `ordered` and `after` as `appendCreated`'s.
 */
export function appendToolMessage(
  app: AgentHost,
  options: Pick<StepRecorderOptions, 'sessionId' | 'runId'>,
  parts: Message['parts'],
  finished?: Pick<FinishedWrite, 'write' | 'events'>,
  ordered = false,
  after?: Promise<unknown>,
  trailing?: readonly SessionEventWrite[],
): Promise<Message> {
  const { sessionId, runId } = options;
  const input = { session_id: sessionId, role: 'tool' as const, parts, run_id: runId, finished: false };
  return appendCreated(app, runId, input, finished?.write, finished?.events, trailing, ordered, after);
}
