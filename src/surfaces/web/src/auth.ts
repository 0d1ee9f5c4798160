/**
 * The bearer token of this tab: entered once (or handed over in the URL fragment by `svc web`),
 * kept in sessionStorage (gone when the tab closes, never sent by the browser on its own, so no
 * cross-site request can ride it), and read by every API call.
 * @module
 */

const KEY = 'svc.token';

export interface TokenStore {
  get(): string | undefined;
  set(token: string): void;
  clear(): void;
}

export function createTokenStore(storage: Storage | undefined = safeSessionStorage()): TokenStore {
  let memory: string | undefined;
  return {
    get: () => storage?.getItem(KEY) ?? memory,
    set(token) {
      memory = token;
      try {
        storage?.setItem(KEY, token);
      } catch {
        // Storage full or denied: the token lives in memory for this page load.
      }
    },
    clear() {
      memory = undefined;
      storage?.removeItem(KEY);
    },
  };
}

/**
 * `#token=…` (what `svc web` prints): take the token, then drop it from the address bar and the
 * history entry so it is not bookmarked, shared or shown. Returns the token when there was one.
 */
export function takeFragmentToken(
  tokens: TokenStore,
  location: Location,
  history: History,
): string | undefined {
  const hash = location.hash.replace(/^#/, '');
  if (!hash.startsWith('token=') && !hash.includes('&token=')) return undefined;
  const params = new URLSearchParams(hash);
  const token = params.get('token')?.trim();
  params.delete('token');
  const rest = params.toString();
  history.replaceState(null, '', `${location.pathname}${location.search}#${rest ? `/?${rest}` : '/'}`);
  if (!token) return undefined;
  tokens.set(token);
  return token;
}

/** Where a 401 leaves sign-in: its message, or none when the page had no token. */
export interface SignedOut {
  state: 'signed-out';
  message?: string;
}

/**
 * The sign-in state after a 401 (`had`: the tab still held a token when it came). A token the
 * server rejects is said so; a 401 that comes after the token was already cleared (another request
 * of the same token in flight, refused a moment later) keeps the page's sign-in and its message
 * rather than wiping the reason.
 */
export function afterUnauthorized<S extends { state: string }>(
  previous: S,
  had: boolean,
  message: string,
): S | SignedOut {
  if (had) return { state: 'signed-out', message };
  return previous.state === 'signed-out' ? previous : { state: 'signed-out' };
}

function safeSessionStorage(): Storage | undefined {
  try {
    return globalThis.sessionStorage;
  } catch {
    return undefined;
  }
}
