/**
 * The one redaction helper. Every serializer (readouts, logs, errors, CLI output) runs through it:
 * known secret values are replaced wherever they appear, and fields whose name says "secret"
 * are masked whatever their value.
 * @module
 */

export const REDACTED = '[REDACTED]';

const SECRET_KEY =
  /(^|_)(api_?key|token|secret|password|passwd|authorization|access_key|secret_key|refresh_token|access_token|client_secret|session_token|bearer)$/i;
// Shapes of credentials that must never leave the process even if we did not learn them first.
const SECRET_PATTERNS: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bsk-ant-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bhf_[A-Za-z0-9]{20,}/g,
  /(\bBearer\s+)[A-Za-z0-9._~+/=-]{12,}/gi,
];
/**
 * What every one of SECRET_PATTERNS needs in the text (a superset: case-insensitive). Most strings
 * (every field of every log line) hold none, and then one test replaces seven replaces (issue 17).
 */
const SECRET_PATTERN_HINT = /sk-|gh[pousr]_|akia|xox[abprs]-|hf_|bearer\s/i;

/** Whether a field's name says it holds a secret (its value is masked, never shown). */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

export interface Redactor {
  /** Remember a secret value so it is scrubbed from everything serialized later. */
  add(secret: string | undefined | null): void;
  string(text: string): string;
  /** Deep copy with secrets scrubbed and secret-named fields masked. */
  value<T>(value: T): T;
}

export function createRedactor(initial: Iterable<string> = []): Redactor {
  const secrets = new Set<string>();
  const add = (secret: string | undefined | null) => {
    // Very short values would redact ordinary words; they are not credentials anyway.
    if (secret && secret.length >= 6) secrets.add(secret);
  };
  for (const s of initial) add(s);

  const string = (text: string): string => {
    let out = text;
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    if (!SECRET_PATTERN_HINT.test(out)) return out;
    for (const pattern of SECRET_PATTERNS) {
      out = out.replace(pattern, (_match, prefix) =>
        typeof prefix === 'string' && /^Bearer\s+$/i.test(prefix) ? `${prefix}${REDACTED}` : REDACTED,
      );
    }
    return out;
  };

  const walk = (input: unknown, key: string | undefined, seen: WeakSet<object>): unknown => {
    if (typeof input === 'string') {
      if (key && SECRET_KEY.test(key) && input.length > 0 && !isSentinel(input)) return maskSecret(input);
      return string(input);
    }
    if (input === null || typeof input !== 'object') return input;
    if (seen.has(input)) return '[circular]';
    seen.add(input);
    if (Array.isArray(input)) return input.map((item) => walk(item, undefined, seen));
    if (input instanceof Date) return input;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(input)) out[k] = walk(v, k, seen);
    return out;
  };

  return { add, string, value: <T>(value: T) => walk(value, undefined, new WeakSet()) as T };
}

/** `keychain:x` and `${ENV}` are references, not secrets: showing them is how provenance is explained. */
function isSentinel(value: string): boolean {
  return /^keychain:[\w.-]+$/.test(value) || /^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$/.test(value);
}

/** A secret shown only by its last four characters at most (none when short). */
export function maskSecret(secret: string): string {
  if (secret.length < 12) return REDACTED;
  return `${REDACTED}…${secret.slice(-4)}`;
}
