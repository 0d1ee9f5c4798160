/**
 * The chat controller: the one place the UI drives the session API. It owns the current
 * session's transcript store and event subscription, creates a session on the first prompt,
 * and turns failures into transcript notices (never a crash, never a stack trace).
 * @module
 */
import { toSvcError } from '../../../errors';
import { safeTerminalText } from '../../../util/terminal-text';
import type { PermissionDecision, SessionSummary, TuiClient } from '../client';
import { createPromptCheckpoint } from './prompt-checkpoints';
import { safeClient } from './safe-text';
import { loadNextModel, loadSessionStore, loadSpend, withSessionRow } from './session-loading';
import { createTranscriptStore, type StoreOptions, type TranscriptStore } from './store';
import { initialState, type NoticeItem } from './transcript';

export interface ChatController {
  readonly client: TuiClient;
  store(): TranscriptStore;
  /** Called when the store is replaced (session switch). */
  onSwitch(listener: () => void): () => void;
  sessionId(): string | undefined;
  open(sessionId?: string): Promise<void>;
  /** The open session's id, creating the session first when none is open yet. */
  ensureSession(): Promise<string>;
  send(text: string): Promise<void>;
  enqueue(text: string): Promise<void>;
  cancel(): Promise<void>;
  answer(requestId: string, decision: PermissionDecision): Promise<void>;
  /** Re-read the session row (title, model, totals). */
  refresh(): Promise<void>;
  notice(level: NoticeItem['level'], text: string): void;
  dispose(): void;
}

const DRAFT: SessionSummary = {
  id: '',
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

export interface ChatControllerOptions {
  store?: StoreOptions;
  /**
   * Take a checkpoint (`checkpoint_create`) before each prompt that starts a run, so `/undo` can
   * put the workspace back to before it. Off by itself where checkpoints are not available (not
   * a git repository, or a server without the tool route).
   */
  checkpoints?: boolean;
}

export function createChatController(
  outside: TuiClient,
  options: ChatControllerOptions = {},
): ChatController {
  // What the client answers is made safe here, once, for the state and every dialog (safe-text.ts).
  const client = safeClient(outside);
  let store = createTranscriptStore(initialState(DRAFT), options.store);
  let subscription: { close(): void } | undefined;
  let noticeSeq = 0;
  let disposed = false;
  const switchListeners = new Set<() => void>();

  const notice = (level: NoticeItem['level'], text: string) => {
    store.update((s) => ({
      ...s,
      items: [
        ...s.items,
        // An error's message may quote a server or a command: made safe like every outside text.
        { kind: 'notice', key: `local:${++noticeSeq}`, level, text: safeTerminalText(text) },
      ],
    }));
  };
  const fail = (error: unknown) => notice('error', toSvcError(error).message);

  const checkpoint = createPromptCheckpoint(client, notice, options.checkpoints === true);

  /** The session's spend from the cost ledger, onto the status line (when the server has it). */
  const refreshSpend = async (id: string) => {
    const spend = await loadSpend(client, id);
    if (spend) store.update((s) => (s.sessionId === id ? { ...s, spend } : s));
  };

  const refresh = async () => {
    const id = store.getSnapshot().sessionId;
    if (!id) return;
    try {
      const [session] = await Promise.all([client.getSession(id), refreshSpend(id)]);
      store.update((s) => withSessionRow(s, session));
    } catch {
      // The status line keeps what it had; the next event retries.
    }
  };

  const open = async (sessionId?: string) => {
    subscription?.close();
    subscription = undefined;
    const previous = store;
    store = sessionId
      ? await loadSessionStore(client, sessionId, {
          store: options.store,
          onSubscribed: (next) => {
            subscription = next;
          },
          refresh: () => void refresh(),
        })
      : createTranscriptStore(initialState(DRAFT), options.store);
    void loadNextModel(client, store, sessionId);
    // The session row was just read by loadSessionStore: only the spend is missing.
    if (sessionId) void refreshSpend(sessionId);
    previous.dispose();
    if (!disposed) for (const listener of [...switchListeners]) listener();
  };

  const ensureSession = async (): Promise<string> => {
    const id = store.getSnapshot().sessionId;
    if (id) return id;
    const session = await client.createSession({});
    await open(session.id);
    return session.id;
  };

  const submit = async (text: string, queue: boolean) => {
    const prompt = text.trim();
    if (!prompt) return;
    try {
      const id = await ensureSession();
      const key = `local:${++noticeSeq}`;
      const running = store.getSnapshot().state !== 'idle';
      // A prompt that starts a run now (an idle session starts even an enqueued one) gets a
      // checkpoint first; one that waits behind a run starts later.
      if (!running) await checkpoint(id, prompt);
      store.update((s) => ({
        ...s,
        items: [...s.items, { kind: 'user', key, text: safeTerminalText(prompt), queued: queue || running }],
      }));
      const result = queue ? await client.enqueue(id, prompt) : await client.sendPrompt(id, prompt);
      if (!result.queued) {
        store.update((s) => ({
          ...s,
          items: s.items.map((i) => (i.key === key && i.kind === 'user' ? { ...i, queued: false } : i)),
          ...(result.run_id ? { runId: result.run_id, state: s.state === 'idle' ? 'running' : s.state } : {}),
        }));
      }
    } catch (error) {
      fail(error);
    }
  };

  void loadNextModel(client, store);

  return {
    client,
    store: () => store,
    onSwitch(listener) {
      switchListeners.add(listener);
      return () => switchListeners.delete(listener);
    },
    sessionId: () => store.getSnapshot().sessionId || undefined,
    async open(sessionId) {
      try {
        await open(sessionId);
      } catch (error) {
        fail(error);
      }
    },
    ensureSession,
    send: (text) => submit(text, false),
    enqueue: (text) => submit(text, true),
    async cancel() {
      const id = store.getSnapshot().sessionId;
      if (!id) return;
      try {
        store.update((s) => (s.state === 'running' ? { ...s, state: 'cancelling' } : s));
        await client.cancel(id);
      } catch (error) {
        fail(error);
      }
    },
    async answer(requestId, decision) {
      const id = store.getSnapshot().sessionId;
      if (!id) return;
      try {
        await client.answerPermission(id, requestId, decision);
        // The resolved event removes it too; removing now keeps the dialog from lingering.
        store.update((s) => ({ ...s, permissions: s.permissions.filter((p) => p.request_id !== requestId) }));
      } catch (error) {
        fail(error);
      }
    },
    refresh,
    notice,
    dispose() {
      disposed = true;
      subscription?.close();
      store.dispose();
      switchListeners.clear();
    },
  };
}
