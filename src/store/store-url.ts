/**
 * The store URL (`[store] url`, `SVC_STORE_URL`): which backend it selects, its parts for error
 * messages, and its printable form with the password masked. Pure string work: nothing here loads
 * the PostgreSQL driver.
 * @module
 */

export interface StoreTarget {
  host: string;
  port: number;
  database: string;
  user: string;
}

/** Whether a configured URL selects PostgreSQL (unset: the SQLite file). */
export function isPostgresUrl(url: string | undefined): url is string {
  return typeof url === 'string' && /^postgres(ql)?:\/\//i.test(url);
}

/** `postgres://user:***@host:5432/db`: the URL as it may be printed, logged or put in an error. */
export function redactStoreUrl(url: string): string {
  const parsed = parse(url);
  if (!parsed) return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** The password in the URL, decoded (for the secret redactor); undefined when there is none. */
export function storeUrlPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const parsed = parse(url);
  if (!parsed?.password) return undefined;
  try {
    return decodeURIComponent(parsed.password);
  } catch {
    return parsed.password;
  }
}

/** Host, port, database and user, with PostgreSQL's defaults where the URL leaves them out. */
export function storeTarget(url: string): StoreTarget {
  const parsed = parse(url);
  const query = parsed?.searchParams;
  const host = parsed?.hostname || query?.get('host') || 'localhost';
  const port = Number(parsed?.port || query?.get('port') || 5432);
  const user = decode(parsed?.username ?? '') || 'postgres';
  const database = decode(parsed?.pathname.replace(/^\//, '') ?? '') || user;
  return { host, port, database, user };
}

function parse(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
