/**
 * resolveSession and sessionIdInput: what an omitted `session_id` means, one policy at a time.
 * Pins: a named session is used (unknown: not_found, or kept for the tools that report it
 * themselves); `current` takes the calling run's session, then the client's current one, then
 * fails naming the field; `client-current` skips the calling run; `context` takes only the
 * calling run's session; `context-or-none` and `none` answer with no session; `most-recent`
 * falls through to the newest top-level session; the field is optional unless required.
 */
import { describe, expect, it } from 'vitest';
import { SvcError } from '../errors';
import { resolveSession, type SessionResolverDeps } from './resolve-session';
import { sessionIdInput } from './session-input';
import type { Session } from './session-store';

const row = (id: string): Session => ({ id, title: id, parent_id: null }) as unknown as Session;

function deps(ids: string[], current: string | null = null): SessionResolverDeps {
  const rows = new Map(ids.map((id) => [id, row(id)]));
  return {
    sessions: {
      get: async (id) => rows.get(id),
      require: async (id) => {
        const found = rows.get(id);
        if (!found) throw new SvcError('not_found', `session_id: no session "${id}"; see svc session list`);
        return found;
      },
      list: async () => [...rows.values()].slice(-1),
    },
    agent: { currentSession: async () => current },
  };
}

const code = async (fn: () => Promise<unknown>) => {
  try {
    await fn();
  } catch (error) {
    return [(error as SvcError).code, (error as SvcError).message];
  }
  return undefined;
};

describe('resolveSession', () => {
  it('uses a named session; an unknown one is not_found unless kept', async () => {
    const d = deps(['ses_a']);
    expect(await resolveSession(d, { session_id: 'ses_a' }, { onMissing: 'current' })).toMatchObject({
      session_id: 'ses_a',
      selected_by: 'input',
    });
    expect(
      await code(async () => await resolveSession(d, { session_id: 'ses_x' }, { onMissing: 'none' })),
    ).toEqual(['not_found', 'session_id: no session "ses_x"; see svc session list']);
    expect(
      await resolveSession(d, { session_id: 'ses_x' }, { onMissing: 'none', onUnknown: 'keep' }),
    ).toEqual({
      session_id: 'ses_x',
      session: undefined,
      selected_by: 'input',
    });
  });

  it('current: the calling run, then the client current session, then an error naming the field', async () => {
    expect(
      (
        await resolveSession(
          deps(['ses_a', 'ses_b'], 'ses_b'),
          {},
          { onMissing: 'current', context: 'ses_a' },
        )
      ).session_id,
    ).toBe('ses_a');
    expect(
      await resolveSession(deps(['ses_a', 'ses_b'], 'ses_b'), {}, { onMissing: 'current' }),
    ).toMatchObject({
      session_id: 'ses_b',
      selected_by: 'current',
    });
    expect(
      await code(async () => await resolveSession(deps(['ses_a']), {}, { onMissing: 'current' })),
    ).toEqual([
      'invalid_input',
      'session_id: required here (there is no current session); pass session_id, or create one with create_session',
    ]);
  });

  it('client-current: skips the calling run', async () => {
    expect(
      (
        await resolveSession(
          deps(['ses_a', 'ses_b'], 'ses_b'),
          {},
          { onMissing: 'client-current', context: 'ses_a' },
        )
      ).session_id,
    ).toBe('ses_b');
  });

  it('context: only the calling run, with the tool’s own words when there is none', async () => {
    const d = deps(['ses_a'], 'ses_a');
    expect((await resolveSession(d, {}, { onMissing: 'context', context: 'ses_a' })).selected_by).toBe(
      'context',
    );
    // The calling run's session is taken as given under `context` (its row may be looked up).
    expect(await resolveSession(d, {}, { onMissing: 'context', context: 'ses_gone' })).toEqual({
      session_id: 'ses_gone',
      session: undefined,
      selected_by: 'context',
    });
    expect(
      await resolveSession(d, { session_id: 'ses_a' }, { onMissing: 'context', onUnknown: 'unchecked' }),
    ).toEqual({
      session_id: 'ses_a',
      session: undefined,
      selected_by: 'input',
    });
    expect(await code(async () => await resolveSession(d, {}, { onMissing: 'context' }))).toEqual([
      'invalid_input',
      'session_id: required (no current session to default to)',
    ]);
    expect(
      await code(
        async () =>
          await resolveSession(
            d,
            {},
            { onMissing: 'context', required: 'session_id: todos belong to a session' },
          ),
      ),
    ).toEqual(['invalid_input', 'session_id: todos belong to a session']);
    expect(await code(async () => await resolveSession(d, {}, { onMissing: 'required' }))).toEqual([
      'invalid_input',
      'session_id: required',
    ]);
  });

  it('context-or-none and none answer with no session; most-recent falls through to the newest', async () => {
    const d = deps(['ses_old', 'ses_new']);
    const none = { session_id: null, session: undefined, selected_by: 'none' };
    expect(await resolveSession(d, {}, { onMissing: 'context-or-none' })).toEqual(none);
    expect(await resolveSession(d, {}, { onMissing: 'none', context: 'ses_old' })).toEqual(none);
    expect(
      (await resolveSession(d, {}, { onMissing: 'context-or-none', context: 'ses_old' })).session_id,
    ).toBe('ses_old');
    expect(await resolveSession(d, {}, { onMissing: 'most-recent', context: 'ses_gone' })).toMatchObject({
      session_id: 'ses_new',
      selected_by: 'most_recent',
    });
    expect(await resolveSession(deps([]), {}, { onMissing: 'most-recent' })).toEqual(none);
  });
});

describe('sessionIdInput', () => {
  it('is optional unless required, non-empty, and says what an omitted id means', () => {
    expect(sessionIdInput('required').safeParse(undefined).success).toBe(false);
    expect(sessionIdInput('current').safeParse(undefined).success).toBe(true);
    expect(sessionIdInput('current').safeParse('').success).toBe(false);
    expect(sessionIdInput('current').description).toBe(
      'Session id. Omit for the session you run in (agent) or the current session.',
    );
    expect(sessionIdInput('none', 'Only runs of this session.').description).toBe(
      'Only runs of this session.',
    );
  });
});
