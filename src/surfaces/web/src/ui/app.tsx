/**
 * The page: sign-in first (by the service's bearer token), then the routes. A 401 from any call
 * sends the page back to sign-in with the reason; a server that cannot be reached gets a
 * message and a retry, never a blank screen.
 * @module
 */
import type { JSX } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { type Api, ApiError, apiBase, createApi } from '../api';
import { afterUnauthorized, type TokenStore } from '../auth';
import { href, type Route, useRoute } from '../router';
import { ErrorBox, Loading } from './common';
import { ReadoutsPage } from './readouts/readouts-page';
import { SessionPage } from './session-page';
import { SessionsPage } from './sessions-page';
import { SignIn } from './sign-in';

type AuthState =
  | { state: 'checking' }
  | { state: 'signed-out'; message?: string }
  | { state: 'ready' }
  | { state: 'unreachable'; error: unknown };

export function App({ tokens }: { tokens: TokenStore }): JSX.Element {
  const [auth, setAuth] = useState<AuthState>({ state: 'checking' });
  const route = useRoute();
  const api = useMemo<Api>(
    () =>
      createApi({
        base: apiBase(location.href),
        token: () => tokens.get(),
        onUnauthorized: (error) => {
          // With no token at all this is just "please sign in"; with one, say it was rejected.
          const had = Boolean(tokens.get());
          tokens.clear();
          setAuth((previous) => afterUnauthorized(previous, had, error.message));
        },
      }),
    [tokens],
  );

  /** A protected call that any token-holder may make: 200 signed in, 401 not. */
  const check = useCallback(
    async (quiet = false) => {
      if (!quiet) setAuth({ state: 'checking' });
      try {
        await api.get('v1/sessions', { limit: 1 });
        setAuth({ state: 'ready' });
        return true;
      } catch (error) {
        // A 401 already moved to sign-in (onUnauthorized).
        if (error instanceof ApiError && error.code === 'unauthorized') return false;
        setAuth({ state: 'unreachable', error });
        return false;
      }
    },
    [api],
  );

  useEffect(() => {
    void check();
  }, [check]);

  const signIn = async (token: string) => {
    tokens.set(token);
    await check(true);
  };
  const signOut = () => {
    tokens.clear();
    setAuth({ state: 'signed-out', message: 'Signed out.' });
  };

  let body: JSX.Element;
  if (auth.state === 'checking') body = <Loading what="svc" />;
  else if (auth.state === 'signed-out') body = <SignIn message={auth.message} onSubmit={signIn} />;
  else if (auth.state === 'unreachable') body = <ErrorBox error={auth.error} onRetry={() => void check()} />;
  else body = <Routed api={api} route={route} />;

  return (
    <div class="app">
      <header class="topbar">
        <a class="brand" href="#/">
          svc
        </a>
        {auth.state === 'ready' ? (
          <nav aria-label="Main">
            <a href="#/" aria-current={route.name === 'sessions' ? 'page' : undefined}>
              Sessions
            </a>
            <a href="#/readouts/dashboard" aria-current={route.name === 'readouts' ? 'page' : undefined}>
              Readouts
            </a>
          </nav>
        ) : null}
        <div class="spacer" />
        {auth.state === 'ready' && tokens.get() ? (
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <main id="main">{body}</main>
    </div>
  );
}

function Routed({ api, route }: { api: Api; route: Route }): JSX.Element {
  switch (route.name) {
    case 'sessions':
      return <SessionsPage api={api} />;
    case 'session':
      return <SessionPage key={route.id} api={api} route={route} />;
    case 'readouts':
      return <ReadoutsPage api={api} readout={route.readout} />;
    case 'unknown':
      return (
        <ErrorBox
          title="No such page"
          error={
            new Error(
              `Nothing lives at #${route.path}. Go back to the sessions: ${href({ name: 'sessions' })}`,
            )
          }
        />
      );
    default: {
      const never: never = route;
      return never;
    }
  }
}
