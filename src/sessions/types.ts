/**
 * The shapes of sessions and their messages, and the store's interface (./session-store.ts builds
 * it). Kept apart so the store's parts (message writes, search) share them without a cycle.
 * @module
 */
import type { FollowingWrite, PrecedingWrite, RidingInsert, TrailingInsert } from '../store/preceding-write';

export type MessageRole = 'user' | 'assistant' | 'system' | 'tool';

/** Provider data that must go back with a part on later turns (e.g. reasoning signatures). */
export type ProviderMetadata = Record<string, Record<string, unknown>>;

export type MessagePart =
  | { type: 'text'; text: string; provider_metadata?: ProviderMetadata }
  | { type: 'reasoning'; text: string; provider_metadata?: ProviderMetadata }
  | {
      type: 'tool-call';
      tool_call_id: string;
      tool: string;
      input: unknown;
      provider_metadata?: ProviderMetadata;
    }
  | { type: 'tool-result'; tool_call_id: string; tool: string; output: unknown; is_error?: boolean }
  | { type: 'file'; path?: string; media_type: string; data?: string; url?: string }
  | { type: 'error'; message: string; code?: string };

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens?: number;
  cached_input_tokens?: number;
}

export interface Session {
  id: string;
  parent_id: string | null;
  title: string;
  mode: string;
  agent: string;
  model: string | null;
  reasoning_effort: string | null;
  workspace: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  metadata: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

export interface Message {
  id: string;
  session_id: string;
  role: MessageRole;
  parts: MessagePart[];
  model: string | null;
  provider: string | null;
  usage: Usage | null;
  cost: number;
  run_id: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface CreateSessionInput {
  /** An id reserved by the caller (ids.next('ses')) that must answer before the row is read back. */
  id?: string;
  title?: string;
  parent_id?: string | null;
  mode?: string;
  agent?: string;
  model?: string | null;
  metadata?: Record<string, unknown>;
}

export interface SessionPatch {
  title?: string;
  mode?: string;
  agent?: string;
  model?: string | null;
  reasoning_effort?: string | null;
  metadata?: Record<string, unknown>;
}

/** A session event as `appendAnnounced` publishes it (its type and payload). */
export interface SessionEventWrite {
  type: string;
  payload: Record<string, unknown>;
}

export interface SessionStore {
  create(input?: CreateSessionInput): Promise<Session>;
  /**
   * PostgreSQL: `create`, its INSERT held to go first in the statement of the session's first
   * run (`RunLedger.create`'s `riding`, inside the same transaction): the row as the INSERT would
   * answer it, `session.created` published, the row answered from memory in this transaction.
   * The caller must hand `insert` to that statement before the transaction commits.
   */
  createHeld?(input?: CreateSessionInput): { session: Session; insert: HeldSessionInsert };
  get(id: string): Promise<Session | undefined>;
  /** Like get, but a not_found SvcError naming the id. */
  require(id: string): Promise<Session>;
  /**
   * PostgreSQL: the row as this process's message append in flight will store it (the row kept in
   * memory with that statement's `updated_at`, ./pg-kept-sessions.ts), undefined when none is in
   * flight or the kept row does not hold. Uncommitted: only for a reader whose result is recorded
   * only if that statement succeeds (a call run ahead of it, src/agent/tool-bridge.ts).
   */
  pending?(id: string): Session | undefined;
  list(options?: { limit?: number; parent_id?: string | null; offset?: number }): Promise<Session[]>;
  /** The session and every descendant, parents first. */
  family(rootId: string): Promise<Session[]>;
  /** The id of the family's root session (the session itself when it has no parent). */
  root(id: string): Promise<string>;
  update(id: string, patch: SessionPatch): Promise<Session>;
  /** Deletes the session with its children and messages; returns the ids removed. */
  delete(id: string): Promise<string[]>;
  /** Full-text search over titles, message text and tool output, best sessions first (./session-search.ts). */
  search(query: string, options?: SessionSearchOptions): Promise<SessionSearchHit[]>;
  /**
   * Adds a step's usage; answers the session row as updated (`RETURNING *`: one statement), or
   * undefined when there is no such session.
   */
  addUsage(
    id: string,
    usage: { input_tokens: number; output_tokens: number; cost: number },
  ): Promise<Session | undefined>;

  appendMessage(input: {
    session_id: string;
    role: MessageRole;
    parts: MessagePart[];
    model?: string | null;
    provider?: string | null;
    usage?: Usage | null;
    cost?: number;
    run_id?: string | null;
    finished?: boolean;
  }): Promise<Message>;
  /**
   * `appendMessage`, then the session event `type` with `payload(message id)` published, as the
   * caller would publish it after: where defined (PostgreSQL with a bus) the event is appended in
   * the message's own statement when the bus can keep publish order (`EventBus.join`), one
   * statement for the two; else published once the message is written. `following`: another
   * domain's write made in the same statement after the message, only when the message was
   * written (p-pgstep6: the step's `phase` run event); it reads its own answer. `preceding`:
   * session events published before the message's own, in the same append when it is joined
   * (p-pgstep7: a tool's `tool.finished` with its result's message), else published with it once
   * the message is written; none when it was not. `trailing`: session events published right
   * after the message's own, the same way (p-pgride: the step's first `tool.started`, its run event
   * in `following`). `ordered`: where the bus cannot join the events now (it is busy), they take
   * their places in its queue at the call all the same (`EventBus.reserve`), not after the
   * statement (a stop's held result, before the stop's `state.changed`).
   */
  appendAnnounced?(
    input: Parameters<SessionStore['appendMessage']>[0],
    type: string,
    payload: (messageId: string) => Record<string, unknown>,
    following?: FollowingWrite,
    preceding?: readonly SessionEventWrite[],
    trailing?: readonly SessionEventWrite[],
    /**
     * `after`: the statement is sent once it settled, and not at all when it rejected (the append
     * then rejects with its error): a stop's release of a step's held start and held result, whose
     * events both take their places at the call (p-heldstep). `id`: the message's id, made by the
     * caller (a held text's: its deltas' events named it already).
     */
    options?: { ordered?: boolean; after?: Promise<unknown>; id?: string },
  ): Promise<Message>;
  /**
   * `appendMessage`, answering also the session's messages as a read right after it answers them
   * (`messages(session_id)`, the new one included), read in the append's own statement: one round
   * trip for the two on PostgreSQL, where it is defined (a run's prompt and its history).
   */
  appendWithMessages?(input: Parameters<SessionStore['appendMessage']>[0]): Promise<{
    message: Message;
    messages: Message[];
  }>;
  /**
   * A run's prompt message made now, written by another domain's statement (PostgreSQL, where it
   * is defined; p-pgstart2: a new session's first run inserted claimed with the session): the
   * message as `appendMessage` answers it, and its rows' INSERTs to ride in that statement. Only
   * for a session that statement inserts (it has no other message; its `updated_at` stays its
   * INSERT's).
   */
  promptInsert?(input: Parameters<SessionStore['appendMessage']>[0]): HeldPrompt;
  /**
   * The write counter of the session's messages in this process, with `appendWithMessages` (taken
   * before its append, compared later: equal, this process wrote none of them since, so the list it
   * answered still holds). Absent where `appendWithMessages` is.
   */
  messagesVersion?(sessionId: string): number;
  updateMessage(id: string, patch: MessagePatch): Promise<Message>;
  /**
   * A step's end in one call: the messages' updates, as `updateMessage` makes each, and the
   * session's usage, as `addUsage`. Answers the session row as the usage UPDATE left it (undefined
   * without `usage` or without the session). A message that does not exist fails it with
   * updateMessage's not_found. PostgreSQL: one statement, nothing written on a failure. SQLite:
   * the same statements as the separate calls, in one promise; as with those calls, the other
   * updates and the usage are written before the failure is answered. Absent (another store), the
   * caller makes the `updateMessage` and `addUsage` calls.
   */
  closeStep?(input: StepClose): Promise<Session | undefined>;
  /**
   * `closeStep` as a write that the run ledger makes first in its own statement
   * (`RunLedger.updateAndAppendAfter`, PostgreSQL): a step's whole end in one statement, all or
   * nothing (a missing message: not_found, nothing written). Its result is `closeStep`'s.
   */
  closeStepWrite?(input: StepClose): PrecedingWrite<Session | undefined>;
  getMessage(id: string): Promise<Message | undefined>;
  messages(sessionId: string, options?: { limit?: number; after?: string }): Promise<Message[]>;
  deleteMessage(id: string): Promise<void>;
  /** Messages stored for the session. */
  messageCount(sessionId: string): Promise<number>;
  count(): Promise<number>;
}

/** What `updateMessage` changes: fields left out keep their stored value. */
export interface MessagePatch {
  parts?: MessagePart[];
  usage?: Usage | null;
  cost?: number;
  finished?: boolean;
}

/** A step's end for `closeStep`: its messages' updates (in this order) and the session's usage. */
export interface StepClose {
  sessionId: string;
  messages: { id: string; patch: MessagePatch }[];
  usage?: { input_tokens: number; output_tokens: number; cost: number };
  /**
   * A new message inserted finished by the step end's statement, with its run event following it
   * (`closeStepWrite` only; p-pgtoolend: the step's only tool result and its `tool.finished`).
   */
  created?: StepCloseCreated;
  /**
   * The step's assistant message, never written before, inserted already closed (its usage, cost,
   * finished) ahead of `created`, with its run events following it before `created`'s (p-heldstep:
   * a step whose only call reads only, its start in its step end; a text step whose message
   * nothing needed before its end). With `created`, its following write is required.
   */
  opened?: StepCloseOpened;
}

/**
 * `StepClose.opened`: the assistant message and its following write (none: no run event rides);
 * `id` set as `created`'s, unless given (a held text's, its deltas' events named it already).
 */
export interface StepCloseOpened {
  id?: string;
  parts: MessagePart[];
  model: string;
  provider: string;
  usage: Usage | null;
  cost: number;
  runId: string;
  /** Its `created_at` (the step's call recorded), before the step end's time. */
  createdAt: number;
  following?: FollowingWrite;
}

/**
 * `StepClose.created`: the message and its following write; `id` is set by `closeStepWrite` (the
 * id it inserts), for the caller's events.
 */
export interface StepCloseCreated {
  id?: string;
  role: MessageRole;
  parts: MessagePart[];
  runId: string;
  following: FollowingWrite;
}

/** Filters of a session search; message filters (role, tool, dates) leave out title-only hits. */
export interface SessionSearchOptions {
  limit?: number;
  /** Only this session. */
  session_id?: string;
  /** Only messages of this role. */
  role?: MessageRole;
  /** Only messages that call this tool or carry its result. */
  tool?: string;
  /** Only messages created at or after this time (epoch ms). */
  since?: number;
  /** Only messages created at or before this time (epoch ms). */
  until?: number;
}

/** One session found, with its best-ranked matching message when a message matched. */
export interface SessionSearchHit {
  session: Session;
  /** Plain text around the match. */
  snippet: string;
  /** The snippet with each matched term wrapped in `**`; absent for a title-only hit. */
  highlight?: string;
  message_id?: string;
  role?: MessageRole;
  /** When the matching message was created (epoch ms). */
  matched_at?: number;
  /** bm25 score of the best message (lower is better). */
  score?: number;
}

export interface SessionRow extends Omit<Session, 'metadata'> {
  metadata: string;
}
export interface MessageRow extends Omit<Message, 'parts' | 'usage'> {
  parts: string;
  usage: string | null;
}

/**
 * A held session's INSERT (`createHeld`). `stamp`: its `updated_at` (and the held row's) set to
 * `at` before the statement goes: its prompt message's time when that rides in the same statement
 * (p-pgstart3), the row then as an append would leave it.
 */
export interface HeldSessionInsert extends RidingInsert {
  stamp(at: number): void;
}

/** `SessionStore.promptInsert`'s answer: the message, its INSERTs, and what they wrote. */
export interface HeldPrompt {
  readonly message: Message;
  /** The message's and its search row's INSERTs, in the statement's order; each told once written. */
  readonly inserts: readonly TrailingInsert[];
  /**
   * Once the statement wrote them: the session's messages (this one alone) and the
   * `messagesVersion` they were written at, as `appendWithMessages` answers them; undefined before.
   */
  written(): { messages: Message[]; version: number } | undefined;
}
