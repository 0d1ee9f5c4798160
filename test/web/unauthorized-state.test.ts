/**
 * The web UI's sign-in state after a 401 (src/surfaces/web/src/auth.ts `afterUnauthorized`): two
 * requests of a token the server stopped accepting are both refused; the second, arriving after the
 * first cleared the token, must not wipe the "rejected" reason (CI on Node 24, 1325d1d: the sign-in
 * form shown without "The server rejected the token").
 */
import { describe, expect, it } from 'vitest';
import { afterUnauthorized } from '../../src/surfaces/web/src/auth';

describe('the web UI after a 401', () => {
  const rejected =
    'The server rejected the token (invalid token). Sign in with the token the service was started with.';

  it('a rejected token says so; a second 401 of the same token keeps that reason', () => {
    const first = afterUnauthorized({ state: 'ready' }, true, rejected);
    expect(first).toEqual({ state: 'signed-out', message: rejected });
    expect(afterUnauthorized(first, false, 'the second refusal')).toBe(first);
  });

  it('a 401 with no token held asks to sign in with no reason, and keeps a "signed out" already shown', () => {
    expect(afterUnauthorized({ state: 'checking' }, false, rejected)).toEqual({ state: 'signed-out' });
    const signedOut = { state: 'signed-out', message: 'Signed out.' };
    expect(afterUnauthorized(signedOut, false, rejected)).toBe(signedOut);
  });
});
