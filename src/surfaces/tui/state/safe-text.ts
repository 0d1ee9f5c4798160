/**
 * Text from outside svc made safe for the terminal where it enters the TUI's state, once, not per
 * render: model text and reasoning, tool titles, summaries and outputs, session titles, error
 * messages (`safeTerminalText`: escape sequences and control characters removed, so model text
 * cannot set the window title, write the clipboard or hide text). A permission request keeps
 * every control character, shown (`visibleControls`): what a person approves is shown whole.
 * `svc attach` goes through the same state, so it gets the same.
 *
 * The dialogs read the client directly (models, providers, sessions, checkpoints, packs, the
 * dashboard, readouts): `safeClient` is the client the chat controller hands them, whose answers
 * and error messages are made safe as they arrive. Events, history and permission requests are
 * made safe where the session is loaded (./session-loading.ts), a permission request its own way.
 * @module
 */
import { SvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import { safeTerminalText, visibleControls } from '../../../util/terminal-text';
import type { PermissionPrompt, SessionSummary, TuiClient } from '../client';

/** `value` with every string in it (deeply, keys too) passed through `clean`; other values as they are. */
export function cleanStrings<T>(value: T, clean: (text: string) => string = safeTerminalText): T {
  if (typeof value === 'string') return clean(value) as T;
  if (Array.isArray(value)) return value.map((v) => cleanStrings(v, clean)) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[clean(k)] = cleanStrings(v, clean);
    return out as T;
  }
  return value;
}

/** An event's payload made safe: a permission request's with its controls shown, any other's stripped. */
export function safeEvent(event: SessionEvent): SessionEvent {
  const clean = event.type === 'permission.requested' ? visibleControls : safeTerminalText;
  return { ...event, payload: cleanStrings(event.payload, clean) };
}

/** A permission request as the dialog shows it: title and details with every control shown. */
export function safePermission(request: PermissionPrompt): PermissionPrompt {
  return cleanStrings(request, visibleControls);
}

/** A session row with its title (the model may have written it) safe to print. */
export function safeSession(session: SessionSummary): SessionSummary {
  return { ...session, title: safeTerminalText(session.title ?? '') };
}

/** `client` with what it answers (but events, history and permission requests) and its errors made safe. */
export function safeClient(client: TuiClient): TuiClient {
  if (SAFE.has(client)) return client;
  const clean =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A) =>
      call(...args).then(cleanStrings, rethrowSafe);
  const errors =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A) =>
      call(...args).catch(rethrowSafe);
  const safe: TuiClient = {
    info: () => client.info(),
    listSessions: clean((options) => client.listSessions(options)),
    createSession: clean((input) => client.createSession(input)),
    getSession: clean((id) => client.getSession(id)),
    messages: errors((id) => client.messages(id)),
    sendPrompt: errors((id, text) => client.sendPrompt(id, text)),
    enqueue: errors((id, text) => client.enqueue(id, text)),
    cancel: errors((id) => client.cancel(id)),
    pendingPermissions: errors((id) => client.pendingPermissions(id)),
    answerPermission: errors((id, request, decision) => client.answerPermission(id, request, decision)),
    subscribe: errors((id, listener, options) => client.subscribe(id, listener, options)),
    toolForCli: (command) => client.toolForCli(command),
    callTool: clean((name, input, options) => client.callTool(name, input, options)),
    listModels: clean(() => client.listModels()),
    setSessionModel: clean((id, selector) => client.setSessionModel(id, selector)),
    providerStatus: clean(() => client.providerStatus()),
    localModel: client.localModel ? clean(() => client.localModel!()) : undefined,
    storeApiKey: errors((provider, key) => client.storeApiKey(provider, key)),
    close: () => client.close(),
  };
  SAFE.add(safe);
  return safe;
}

const SAFE = new WeakSet<TuiClient>();

/** An SvcError's message (a server's words) made safe; its code and details stay for the UI's checks. */
function rethrowSafe(error: unknown): never {
  if (!SvcError.is(error) || safeTerminalText(error.message) === error.message) throw error;
  throw new SvcError(error.code, safeTerminalText(error.message), {
    status: error.status,
    details: error.details,
    retryable: error.retryable,
    retryAfterMs: error.retryAfterMs,
    cause: error,
  });
}
