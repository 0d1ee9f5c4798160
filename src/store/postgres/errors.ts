/**
 * What a PostgreSQL failure means for the person running svc (issue 18): the server cannot be
 * reached, the password is wrong, the database does not exist, the role lacks a permission. Each
 * becomes one `SvcError` naming host, port and database with the password masked, and the next
 * step; never a driver stack trace. A data exception or program limit (SQLSTATE class 22 or 54)
 * is an `internal` error, not a retryable `unavailable` one. Other errors keep the server's
 * message, redacted the same way.
 * @module
 */
import { SvcError } from '../../errors';
import { type StoreTarget, storeUrlPassword } from '../store-url';

export interface StoreErrorContext {
  target: StoreTarget;
  /** The URL with its password masked. */
  redactedUrl: string;
  /** The URL as configured: its password is scrubbed from any message that repeats it. */
  url: string;
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
]);

/** A PostgreSQL (or network) error as an SvcError; an SvcError passes through unchanged. */
export function storeError(error: unknown, context: StoreErrorContext): SvcError {
  if (SvcError.is(error)) return error;
  const { target } = context;
  const code = String((error as { code?: unknown }).code ?? '');
  const raw = scrub(error instanceof Error ? error.message : String(error), context);
  const where = `PostgreSQL at ${target.host}:${target.port} (database "${target.database}", user "${target.user}", ${context.redactedUrl})`;
  const details = {
    host: target.host,
    port: target.port,
    database: target.database,
    user: target.user,
    code,
  };
  const check = 'check [store] url or SVC_STORE_URL, then run svc doctor --store';
  if (
    UNREACHABLE.has(code) ||
    /timeout expired|connection timeout|Connection terminated unexpectedly/i.test(raw)
  ) {
    const reason =
      code === 'ECONNREFUSED'
        ? 'connection refused'
        : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? `host "${target.host}" not found`
          : /timeout/i.test(raw) || code === 'ETIMEDOUT'
            ? 'timed out connecting'
            : /Connection terminated unexpectedly/i.test(raw)
              ? // pg's words when the socket closed before the server's first answer (an unroutable
                // address whose network resets the connection, a port that is not PostgreSQL's).
                'the connection was closed before PostgreSQL answered (no PostgreSQL server at that address, or a firewall or proxy closed it)'
              : raw;
    return new SvcError('unavailable', `cannot reach ${where}: ${reason}; start the server or ${check}`, {
      details: { ...details, reason: 'unreachable' },
    });
  }
  if (/timeout exceeded when trying to connect/i.test(raw)) {
    return new SvcError(
      'unavailable',
      `${where}: every pooled connection stayed busy past [store] connect_timeout_ms; raise [store] pool_size or look for slow statements`,
      { details: { ...details, reason: 'pool_busy' } },
    );
  }
  if (code === '28P01' || code === '28000') {
    return new SvcError(
      'unauthorized',
      `${where} refused the login: ${raw}; check the user and password in [store] url (use \${ENV} for the password) and the server's pg_hba.conf`,
      { details: { ...details, reason: 'auth' } },
    );
  }
  if (code === '3D000') {
    return new SvcError(
      'config_error',
      `${where}: database "${target.database}" does not exist; create it (createdb -O ${target.user} ${target.database}, see docs/cluster.md) or ${check}`,
      { details: { ...details, reason: 'no_database' } },
    );
  }
  if (code === '42501') {
    return new SvcError(
      'forbidden',
      `${where}: permission denied (${raw}); grant the role what svc needs (GRANT ALL ON DATABASE ${target.database} TO ${target.user}, and ownership of schema public, see docs/cluster.md)`,
      { details: { ...details, reason: 'permission' } },
    );
  }
  if (code === '23505' || code === '23503') {
    // A unique or foreign key constraint: the database decided a race (two nodes, one key).
    return new SvcError('conflict', `${where}: ${raw}`, {
      details: { ...details, reason: code === '23505' ? 'unique_violation' : 'foreign_key_violation' },
    });
  }
  if (code === '57014') {
    return new SvcError('timeout', `${where}: a statement ran past [store] statement_timeout_ms (${raw})`, {
      details: { ...details, reason: 'statement_timeout' },
    });
  }
  if (code.startsWith('22') || code.startsWith('54')) {
    // A data exception or a program limit (a word or a value too long): the same data fails the
    // same way again, so no 503 inviting a retry.
    return new SvcError(
      'internal',
      `${where} refused the data (SQLSTATE ${code}): ${raw}; retrying will not help: change or shorten what was sent, or report it if svc wrote it`,
      { details: { ...details, reason: 'data' } },
    );
  }
  return new SvcError('unavailable', `${where}: ${raw}`, { details: { ...details, reason: 'error' } });
}

function scrub(message: string, context: StoreErrorContext): string {
  let out = message.split(context.url).join(context.redactedUrl);
  const password = storeUrlPassword(context.url);
  if (password && password.length > 0) out = out.split(password).join('***');
  return out;
}

/**
 * Whether PostgreSQL answered `error` (a SQLSTATE of its own: the statement or COMMIT was refused),
 * not a connection lost before its answer (class 08, an admin shutdown `57P01`..`57P03`, a socket
 * error such as `EPIPE`): refused, a COMMIT is known not to have committed.
 */
export function serverAnswered(error: unknown): boolean {
  const own = (error as { code?: unknown } | undefined)?.code;
  const code = String(
    (typeof own === 'string'
      ? own
      : (error as { details?: { code?: unknown } } | undefined)?.details?.code) ?? '',
  );
  return /^[0-9A-DF-Z][0-9A-Z]{4}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P');
}
