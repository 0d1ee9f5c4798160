/**
 * Which session a call is about: the one named, or, when `session_id` is omitted, what the tool
 * says an omitted id means (`onMissing`). One resolver for every tool, so "omit for the current
 * session" means the same thing everywhere it is written.
 * @module
 */
import { SvcError } from '../errors';
import type { Session, SessionStore } from './session-store';

/** What an omitted `session_id` means. */
export type MissingSession =
  /** Nothing: the id is required (an invalid_input error). */
  | 'required'
  /** The calling run's session, else the client's current session, else an error. */
  | 'current'
  /** The client's current session (not the calling run's), else an error. */
  | 'client-current'
  /** The calling run's (or MCP-bound) session, else an error. */
  | 'context'
  /** The calling run's session, else no session (the tool answers for the workspace). */
  | 'context-or-none'
  /** The calling run's session, the current one, else the newest top-level one; else none. */
  | 'most-recent'
  /** No session: the tool answers for every session, or with the defaults. */
  | 'none';

/** Policies that always find a session row (or fail). */
type RowMissing = 'required' | 'current' | 'client-current';
/** Policies that always find a session id (or fail). */
type IdMissing = RowMissing | 'context';

export interface SessionResolverDeps {
  sessions: Pick<SessionStore, 'get' | 'require' | 'list'>;
  /** The client's current session (switch_session, svc run --continue). */
  agent: { currentSession(): Promise<string | null> };
}

export interface ResolveOptions {
  onMissing: MissingSession;
  /** The calling run's session (`ctx.sessionId`; the MCP-bound session over MCP). */
  context?: string;
  /**
   * A named session that does not exist: an error (default); kept (`session` undefined) for a
   * tool that answers for an unknown session in its own words (readouts warn); or unchecked: the
   * id as given, never looked up (packs and the retained events say why themselves, and must
   * answer without opening the database).
   */
  onUnknown?: 'error' | 'keep' | 'unchecked';
  /** The message when the id is omitted and the policy finds none (default per policy). */
  required?: string;
}

/** How the session was chosen. */
export type SelectedBy = 'input' | 'context' | 'current' | 'most_recent' | 'none';

export interface SessionResolution {
  /** The id named or chosen; null when there is no session. */
  session_id: string | null;
  /** The session, when it exists. */
  session: Session | undefined;
  selected_by: SelectedBy;
}

/** Resolved under a policy that never answers with no session, with unknown ids refused. */
export interface ResolvedSession extends SessionResolution {
  session_id: string;
  session: Session;
}

export function resolveSession(
  deps: SessionResolverDeps,
  input: { session_id?: string | null },
  options: ResolveOptions & { onMissing: RowMissing; onUnknown?: 'error' },
): Promise<ResolvedSession>;
export function resolveSession(
  deps: SessionResolverDeps,
  input: { session_id?: string | null },
  options: ResolveOptions & { onMissing: IdMissing },
): Promise<SessionResolution & { session_id: string }>;
export function resolveSession(
  deps: SessionResolverDeps,
  input: { session_id?: string | null },
  options: ResolveOptions,
): Promise<SessionResolution>;
export async function resolveSession(
  deps: SessionResolverDeps,
  input: { session_id?: string | null },
  options: ResolveOptions,
): Promise<SessionResolution> {
  const named = input.session_id;
  const onUnknown = options.onUnknown ?? 'error';
  if (named) return await found(deps, named, 'input', onUnknown);
  const { onMissing, context } = options;
  // The calling run's session: `current` hands back its row; the others take the id as given.
  if (context && onMissing === 'current') return await found(deps, context, 'context', 'error');
  if (context && (onMissing === 'context' || onMissing === 'context-or-none')) {
    return await found(deps, context, 'context', onUnknown === 'unchecked' ? 'unchecked' : 'keep');
  }
  switch (onMissing) {
    case 'current':
    case 'client-current': {
      const current = await deps.agent.currentSession();
      if (current) return await found(deps, current, 'current', 'error');
      throw new SvcError(
        'invalid_input',
        options.required ??
          'session_id: required here (there is no current session); pass session_id, or create one with create_session',
      );
    }
    case 'most-recent': {
      if (context) {
        const session = await deps.sessions.get(context);
        if (session) return { session, session_id: session.id, selected_by: 'context' };
      }
      const current = await deps.agent.currentSession();
      const session = current ? await deps.sessions.get(current) : undefined;
      if (session) return { session, session_id: session.id, selected_by: 'current' };
      const newest = (await deps.sessions.list({ limit: 1, parent_id: null }))[0];
      if (newest) return { session: newest, session_id: newest.id, selected_by: 'most_recent' };
      return NONE;
    }
    case 'required':
      throw new SvcError('invalid_input', options.required ?? 'session_id: required');
    case 'context':
      throw new SvcError(
        'invalid_input',
        options.required ?? 'session_id: required (no current session to default to)',
      );
    case 'context-or-none':
    case 'none':
      return NONE;
    default: {
      const exhaustive: never = onMissing;
      throw new SvcError('internal', `unknown session policy ${String(exhaustive)}`);
    }
  }
}

const NONE: SessionResolution = { session_id: null, session: undefined, selected_by: 'none' };

async function found(
  deps: SessionResolverDeps,
  id: string,
  selectedBy: SelectedBy,
  onUnknown: 'error' | 'keep' | 'unchecked',
): Promise<SessionResolution> {
  const session =
    onUnknown === 'unchecked'
      ? undefined
      : onUnknown === 'error'
        ? await deps.sessions.require(id)
        : await deps.sessions.get(id);
  return { session, session_id: id, selected_by: selectedBy };
}
