/**
 * One open session in the page: its transcript (the TUI's own reducer, so the browser shows
 * what the terminal shows), the live event stream, and the actions of the prompt box and the
 * permission card. Opening subscribes first and reads the history after the stream is live, so
 * nothing published in between is lost; events that arrived meanwhile are kept on top of it. A
 * stream that was not live when the history was read (refused for the stream limit, or slow) has
 * the history read again once it is live: its first `connected` starts at "now".
 *
 * A page hidden for `HIDDEN_GRACE_MS` lets its stream go while nothing needs it (./events.ts): the
 * server keeps no stream for it, and where the stream is fetched (no WebSocket) it frees one of the
 * browser's 6 connections to a server.
 * @module
 */
import type { HistoryMessage, PermissionPrompt, SessionSummary } from '../../tui/client';
import { createTranscriptStore, type TranscriptStore } from '../../tui/state/store';
import { initialState, type TranscriptState } from '../../tui/state/transcript';
import { type Api, ApiError, errorMessage } from './api';
import { type EventStream, openEventStream, type StreamStatus } from './events';

export type Decision = 'allow_once' | 'allow_session' | 'deny';

export interface SessionView extends SessionSummary {
  state: string;
  queue_length: number;
  message_count: number;
  workflow_phase: string;
}

export interface ControllerState {
  /** undefined until the first load finished. */
  session?: SessionView;
  loadError?: ApiError;
  stream: StreamStatus;
  /** The last failed action (send, answer, undo…), shown above the prompt box. */
  actionError?: string;
  /** The checkpoint taken before the latest prompt (what "undo" restores). */
  lastCheckpoint?: { id: string; name: string };
  checkpointNote?: string;
}

export interface SessionController {
  readonly id: string;
  transcript(): TranscriptStore;
  state(): ControllerState;
  subscribe(listener: () => void): () => void;
  send(text: string, mode: 'send' | 'queue'): Promise<boolean>;
  cancel(): Promise<void>;
  answer(requestId: string, decision: Decision): Promise<void>;
  setActionError(message: string | undefined): void;
  reload(): Promise<void>;
  /** The stream waits out a back-off: connect now (the "Try again" button). */
  reconnect(): void;
  dispose(): void;
}

/** How long a hidden page keeps its event stream before letting it go. */
export const HIDDEN_GRACE_MS = 5_000;

/** The grace period: `HIDDEN_GRACE_MS`, or `window.__svcHiddenGraceMs` when set (the tests set it). */
function hiddenGraceMs(): number {
  const set = (globalThis as { __svcHiddenGraceMs?: unknown }).__svcHiddenGraceMs;
  return typeof set === 'number' && Number.isFinite(set) && set >= 0 ? set : HIDDEN_GRACE_MS;
}

export function createSessionController(api: Api, id: string): SessionController {
  const path = `v1/sessions/${encodeURIComponent(id)}`;
  let store = createTranscriptStore(initialState(draft(id)));
  let state: ControllerState = { stream: { state: 'connecting' } };
  let stream: EventStream | undefined;
  let disposed = false;
  /** Sends not answered yet: a hidden page keeps its stream meanwhile. */
  let sending = 0;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };
  const set = (patch: Partial<ControllerState>) => {
    state = { ...state, ...patch };
    notify();
  };

  const refreshSession = async () => {
    try {
      const { session } = await api.get<{ session: SessionView }>(path);
      if (!disposed) set({ session });
    } catch {
      // The header keeps what it had; the next event retries.
    }
  };

  const open = async () => {
    stream?.close();
    store.dispose();
    const { session } = await api.get<{ session: SessionView }>(path);
    const next = createTranscriptStore(initialState(session));
    store = next;
    set({ session, loadError: undefined });
    let live!: () => void;
    const isLive = new Promise<void>((resolve) => {
      live = resolve;
    });
    /** The history was read before the stream first went live: read it again when it does. */
    let readBeforeLive = false;
    let wasLive = false;
    stream = openEventStream({
      api,
      sessionId: id,
      onEvent(event) {
        next.dispatch(event);
        if (event.type === 'message.created' && event.payload.role === 'user')
          void showForeignPrompt(next, String(event.payload.message_id));
        if (
          event.type === 'session.updated' ||
          event.type === 'run.finished' ||
          event.type === 'state.changed'
        )
          void refreshSession();
      },
      onStatus(status) {
        if (status.state === 'live') {
          live();
          if (!wasLive && readBeforeLive && store === next) void readAgain(next);
          wasLive = true;
        }
        next.update((s) => ({
          ...s,
          connection:
            status.state === 'live' ? 'connected' : status.state === 'stopped' ? 'closed' : 'reconnecting',
        }));
        set({ stream: status });
        // Not live soon (stopped, refused, opened hidden): the history is shown now, and read
        // again once live.
        if (status.state === 'stopped' || status.state === 'limited' || status.state === 'paused') live();
      },
      onReset: () => void reload(),
      // A hidden page lets its connection go unless it may be needed: an open stream is an attached
      // client, so a run's permission requests wait for an answer instead of failing unattended.
      pauseWhenHidden: {
        graceMs: hiddenGraceMs(),
        mayPause: () => {
          const s = next.getSnapshot();
          return s.state === 'idle' && s.permissions.length === 0 && sending === 0;
        },
      },
    });
    // The history is read once the stream is live (bounded: a stream that cannot connect still shows it).
    await Promise.race([isLive, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    readBeforeLive = !wasLive;
    await readHistory(next, session);
    notify();
  };

  /** The session and its history read again (the stream went live after the first read). */
  const readAgain = async (next: TranscriptStore) => {
    try {
      const { session } = await api.get<{ session: SessionView }>(path);
      if (disposed || store !== next) return;
      set({ session });
      await readHistory(next, session);
      notify();
    } catch {
      // What was read first stays; a reload reads it all again.
    }
  };

  /** The history and the open permission requests, with what the stream brought kept on top. */
  const readHistory = async (next: TranscriptStore, session: SessionView) => {
    const [history, permissions] = await Promise.all([
      api.get<{ messages: HistoryMessage[] }>(`${path}/messages`, { limit: 1000 }),
      api
        .get<{ permissions: PermissionPrompt[] }>(`${path}/permissions`)
        .catch(() => ({ permissions: [] as PermissionPrompt[] })),
    ]);
    const fresh = initialState(session, history.messages ?? []);
    next.update((s) => ({
      ...fresh,
      items: [...fresh.items, ...s.items.filter((i) => !fresh.items.some((h) => h.key === i.key))],
      state: s.lastEventId > 0 ? s.state : ((session.state as typeof s.state) ?? 'idle'),
      runId: s.runId,
      runModel: s.runModel,
      queue: s.queue,
      context: s.context,
      connection: s.connection,
      lastEventId: s.lastEventId,
      permissions: [
        ...(permissions.permissions ?? []),
        ...s.permissions.filter((p) => !permissions.permissions?.some((q) => q.request_id === p.request_id)),
      ],
    }));
    next.flush();
  };

  /**
   * A prompt sent from elsewhere (another browser, the TUI, the API): events carry no prompt
   * text, so hold its place in the transcript and fill it from the history.
   */
  const showForeignPrompt = async (target: TranscriptStore, messageId: string) => {
    const known = (s: TranscriptState) =>
      s.items.some((i) => i.kind === 'user' && i.message_id === messageId);
    if (known(target.getSnapshot())) return;
    const key = `u:${messageId}`;
    target.update((s) =>
      known(s) ? s : { ...s, items: [...s.items, { kind: 'user', key, text: '…', message_id: messageId }] },
    );
    try {
      const { messages } = await api.get<{ messages: HistoryMessage[] }>(`${path}/messages`, { limit: 20 });
      const found = messages.find((m) => m.id === messageId);
      const text = found?.parts.map((p) => (p.type === 'text' ? String(p.text) : '')).join('') ?? '';
      target.update((s) => ({
        ...s,
        items: s.items.map((i) =>
          i.key === key && i.kind === 'user' ? { ...i, text: text || '(prompt)' } : i,
        ),
      }));
    } catch {
      // The placeholder stays; a reload shows the text.
    }
  };

  const reload = async () => {
    try {
      await open();
    } catch (error) {
      if (!disposed)
        set({
          loadError: error instanceof ApiError ? error : new ApiError('server_error', errorMessage(error)),
        });
    }
  };

  /** Like the TUI: a checkpoint before each prompt that starts a run, so undo can go back to it. */
  const checkpoint = async (prompt: string) => {
    const firstLine = prompt.split('\n')[0];
    const preview = firstLine.length > 60 ? `${firstLine.slice(0, 59)}…` : firstLine;
    try {
      const created = await api.post<{ id: string; name: string }>('v1/checkpoints', {
        name: `before: ${preview}`,
        description: prompt.slice(0, 2000),
      });
      set({ lastCheckpoint: { id: created.id, name: created.name }, checkpointNote: undefined });
    } catch (error) {
      set({
        checkpointNote: /not_a_git_repository|not a git repository/i.test(errorMessage(error))
          ? 'No checkpoint before this prompt: the workspace is not a git repository, so undo has nothing to restore.'
          : `No checkpoint before this prompt: ${errorMessage(error)}`,
      });
    }
  };

  void reload();

  return {
    id,
    transcript: () => store,
    state: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async send(text, mode) {
      const prompt = text.trim();
      if (!prompt) return false;
      const running = store.getSnapshot().state !== 'idle';
      const key = `local:${Date.now()}:${Math.random().toString(36).slice(2)}`;
      sending++;
      try {
        set({ actionError: undefined });
        if (!running) await checkpoint(prompt);
        store.update((s) => ({
          ...s,
          items: [...s.items, { kind: 'user', key, text: prompt, queued: mode === 'queue' || running }],
        }));
        const result =
          mode === 'queue'
            ? await api.post<{ run_id?: string; queued?: boolean }>(`${path}/queue`, { prompt })
            : await api.post<{ run_id?: string; queued?: boolean }>(`${path}/messages`, { prompt });
        if (!result.queued) {
          store.update((s) => ({
            ...s,
            items: s.items.map((i) => (i.key === key && i.kind === 'user' ? { ...i, queued: false } : i)),
            ...(result.run_id
              ? { runId: result.run_id, state: s.state === 'idle' ? 'running' : s.state }
              : {}),
          }));
        }
        store.flush();
        return true;
      } catch (error) {
        // The server never took it: it leaves the transcript (the prompt box keeps the text to
        // send again). One the server did take got its message id from the stream and stays.
        store.update((s) => ({
          ...s,
          items: s.items.filter((i) => !(i.key === key && i.kind === 'user' && !i.message_id)),
        }));
        store.flush();
        set({
          actionError: `Could not send the prompt (it was not sent and is still in the box below): ${errorMessage(error)}`,
        });
        return false;
      } finally {
        sending--;
      }
    },
    async cancel() {
      try {
        store.update((s) => (s.state === 'running' ? { ...s, state: 'cancelling' } : s));
        await api.post(`${path}/cancel`, {});
      } catch (error) {
        set({ actionError: `Could not cancel: ${errorMessage(error)}` });
      }
    },
    async answer(requestId, decision) {
      try {
        await api.post(`${path}/permissions/${encodeURIComponent(requestId)}`, { decision, by: 'web' });
        store.update((s) => ({ ...s, permissions: s.permissions.filter((p) => p.request_id !== requestId) }));
        store.flush();
      } catch (error) {
        if (error instanceof ApiError && error.code === 'not_found') {
          // Answered elsewhere (another browser, the TUI) or its run ended: the card goes.
          store.update((s) => ({
            ...s,
            permissions: s.permissions.filter((p) => p.request_id !== requestId),
          }));
          set({ actionError: 'That request was already answered or its run ended.' });
          return;
        }
        set({ actionError: `Could not answer: ${errorMessage(error)}` });
      }
    },
    setActionError: (message) => set({ actionError: message }),
    reload,
    reconnect: () => stream?.retry(),
    dispose() {
      disposed = true;
      stream?.close();
      store.dispose();
      listeners.clear();
    },
  };
}

function draft(id: string): SessionSummary {
  return {
    id,
    title: '',
    model: null,
    mode: 'build',
    agent: 'build',
    parent_id: null,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost: 0,
    created_at: 0,
    updated_at: 0,
  };
}
