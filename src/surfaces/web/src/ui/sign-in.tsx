/**
 * Sign-in: the bearer token the service was started with (`--token`, `[services.http].token`,
 * `SVC_HTTP_TOKEN`, or the one `svc web` made). Kept in this tab's session storage only.
 * @module
 */
import { useEffect, useRef, useState } from 'preact/hooks';

export function SignIn({ message, onSubmit }: { message?: string; onSubmit(token: string): Promise<void> }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <form
      class="sign-in"
      onSubmit={async (event) => {
        event.preventDefault();
        const value = token.trim();
        if (!value) return;
        setBusy(true);
        try {
          await onSubmit(value);
        } finally {
          setBusy(false);
          setToken('');
        }
      }}
    >
      <h1>Sign in to svc</h1>
      <p class="muted">
        Enter the service's access token: the <code>--token</code> it was started with,{' '}
        <code>[services.http].token</code> or <code>SVC_HTTP_TOKEN</code>. It stays in this tab only.
      </p>
      {message ? (
        <p class="error-line" role="alert">
          {message}
        </p>
      ) : null}
      <label for="token">Access token</label>
      <input
        id="token"
        ref={input}
        type="password"
        autocomplete="current-password"
        value={token}
        onInput={(event) => setToken((event.target as HTMLInputElement).value)}
        required
      />
      <button type="submit" disabled={busy || !token.trim()}>
        {busy ? 'Checking…' : 'Sign in'}
      </button>
    </form>
  );
}
