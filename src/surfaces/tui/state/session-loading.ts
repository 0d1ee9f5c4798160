/**
 * Loading a session into a transcript store, for the chat controller: subscribe first, then read
 * the history and the pending permission requests, and keep what arrived in between on top; and
 * the two reads that refresh the status line (the session row, the next turn's model).
 * @module
 */
import type { EventSubscription, PermissionPrompt, SessionSummary, TuiClient } from '../client';
import { cleanStrings, safeEvent, safePermission, safeSession } from './safe-text';
import { createTranscriptStore, type StoreOptions, type TranscriptStore } from './store';
import { initialState, type TranscriptState } from './transcript';
import type { Spend } from './transcript-types';

/**
 * A store for the session, subscribed to its events before its history is read so nothing
 * published in between is lost. `onSubscribed` gets the subscription as soon as it exists.
 * Everything read here is made safe for the terminal on its way in (safe-text.ts).
 */
export async function loadSessionStore(
  client: TuiClient,
  sessionId: string,
  options: {
    store?: StoreOptions;
    onSubscribed(subscription: EventSubscription): void;
    /** The session row changed (title, model, totals): re-read it. */
    refresh(): void;
  },
): Promise<TranscriptStore> {
  const session = safeSession(await client.getSession(sessionId));
  const next = createTranscriptStore(initialState(session), options.store);
  options.onSubscribed(
    await client.subscribe(
      session.id,
      (event) => {
        next.dispatch(safeEvent(event));
        if (event.type === 'session.updated' || event.type === 'run.finished') options.refresh();
      },
      {
        onStatus: (status) => next.update((s) => ({ ...s, connection: status })),
      },
    ),
  );
  const [history, permissions] = await Promise.all([
    client.messages(session.id),
    client.pendingPermissions(session.id).catch(() => []),
  ]);
  const fresh = initialState(session, cleanStrings(history));
  next.update((s) => withHistory(s, fresh, permissions.map(safePermission)));
  next.flush();
  return next;
}

/** The history read on top of what events already put in the store. */
function withHistory(
  s: TranscriptState,
  fresh: TranscriptState,
  permissions: PermissionPrompt[],
): TranscriptState {
  return {
    ...fresh,
    // Events that arrived while the history loaded are kept on top of it.
    items: [...fresh.items, ...s.items.filter((i) => !fresh.items.some((h) => h.key === i.key))],
    state: s.state,
    runId: s.runId,
    runModel: s.runModel,
    nextModel: s.nextModel,
    queue: s.queue,
    context: s.context,
    spend: s.spend,
    lastEventId: s.lastEventId,
    permissions: [
      ...permissions,
      ...s.permissions.filter((p) => !permissions.some((q) => q.request_id === p.request_id)),
    ],
  };
}

/** The session row's title, model and totals, once the row has caught up with the events. */
export function withSessionRow(s: TranscriptState, session: SessionSummary): TranscriptState {
  if (s.sessionId !== session.id) return s;
  return {
    ...s,
    title: safeSession(session).title,
    model: session.model,
    // The session row is the truth once the agent books usage there; until then the
    // run.finished totals counted here stand.
    usage: {
      input_tokens: Math.max(s.usage.input_tokens, session.prompt_tokens),
      output_tokens: Math.max(s.usage.output_tokens, session.completion_tokens),
      cost: Math.max(s.usage.cost, session.cost),
    },
  };
}

/** What the next turn would run on (the status line before the first run), from get_model_selection. */
export async function loadNextModel(
  client: TuiClient,
  target: TranscriptStore,
  sessionId?: string,
): Promise<void> {
  try {
    const { value } = await client.callTool(
      'get_model_selection',
      sessionId ? { session_id: sessionId } : {},
    );
    const selector = (value as { selector?: string | null }).selector;
    if (selector) target.update((s) => ({ ...s, nextModel: selector }));
  } catch {
    // An older server without the route: the status line says "default model".
  }
}

interface SpendReadout {
  spend?: {
    session: { cost: number } | null;
    today: { cost: number };
    budget?: { session_usd: number | null; daily_usd: number | null };
  };
}

/**
 * The session's and today's spend from the cost ledger (`stats_report`), hidden model calls
 * included. Undefined when the server has no ledger (an older server) or the read fails: the
 * status line then keeps the run totals.
 */
export async function loadSpend(client: TuiClient, sessionId: string): Promise<Spend | undefined> {
  try {
    const { value } = await client.callTool('stats_report', {
      by: 'purpose',
      days: 1,
      session_id: sessionId,
    });
    const spend = (value as SpendReadout).spend;
    if (!spend || typeof spend.today?.cost !== 'number') return undefined;
    return {
      session: spend.session?.cost ?? 0,
      today: spend.today.cost,
      session_limit: spend.budget?.session_usd ?? undefined,
      daily_limit: spend.budget?.daily_usd ?? undefined,
    };
  } catch {
    return undefined;
  }
}
