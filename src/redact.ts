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
 * An HTTP credential header and its value, whatever the scheme: `Authorization: Basic dXNl…`,
 * `-H 'X-Api-Key: …'`, `"Private-Token": "…"`. The name (and scheme) stay, the value is redacted.
 */
const SECRET_HEADER =
  /(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:[A-Za-z][\w-]*\s+)?|\b(?:[a-z0-9]+-)*(?:api-?key|auth-token|access-token|private-token)["']?\s*:\s*["']?)([^\s'"`\\,;()[\]{}<>$]{6,})/gi;
/** A URL's password: `postgres://admin:…@db/x`, `https://bob:…@host/` (the user name stays). */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/?#"'<>]*:)([^\s@/?#"'<>]+)(?=@)/gi;
/**
 * A line (or a one-line object's entry) that gives a secret-named key (isSecretKey) its value:
 * `db_password = …`, `export AWS_SECRET_ACCESS_KEY=…`, `"token": "…"`. The key stays, the value
 * is redacted.
 */
const SECRET_ASSIGNMENT =
  /((?:^|[{,])[ \t]*(?:export[ \t]+)?["']?([A-Za-z][\w.-]*)["']?[ \t]*[=:][ \t]*["']?)([^\s'"`,;()[\]{}<>$]{6,})(?![\w(.[$])/gm;
/**
 * Values URL_PASSWORD, SECRET_HEADER and SECRET_ASSIGNMENT leave, being code or words rather than credentials:
 * a plain or camelCase word (`string`, `hashedPassword`, `required`) or a chain of names without
 * digits (`config.db.password`). A call (`getpass()`), an index or a `$VAR` never matches at all.
 */
const NOT_A_SECRET = /^[A-Za-z][a-z]*(?:[A-Z][a-z]+)*$|^(?:[A-Za-z_]+\.)+[A-Za-z_]+$/;
/**
 * What every one of SECRET_PATTERNS needs in the text (a superset: case-insensitive). Most strings
 * (every field of every log line) hold none, and then one test replaces seven replaces (issue 17).
 */
const SECRET_PATTERN_HINT = /sk-|gh[pousr]_|akia|xox[abprs]-|hf_|bearer\s/i;
/** What URL_PASSWORD, SECRET_HEADER and SECRET_ASSIGNMENT need in the text (a superset). */
const CREDENTIAL_SHAPE_HINT =
  /:\/\/[^\s/@]+@|authorization|api-?key|auth-token|access-token|private-token|(?:key|token|secret|passwd|password)["']?[ \t]*[=:]/i;

/** The text with every credential of a known token shape (SECRET_PATTERNS) redacted. */
function redactTokens(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) {
    out = out.replace(pattern, (_match, prefix) =>
      typeof prefix === 'string' && /^Bearer\s+$/i.test(prefix) ? `${prefix}${REDACTED}` : REDACTED,
    );
  }
  return out;
}

/**
 * The text with credentials given by their context redacted: header values (`Authorization: Basic
 * …`, `X-Api-Key: …`), secret-named assignments (`db_password = …`) and URL passwords. For text
 * that leaves svc for someone else (exported spans), not for the redactor every tool answer passes
 * through: the model must read a workspace's files as they are (a `password = …` line it saw as
 * `[REDACTED]` it could write back so).
 */
export function redactCredentialShapes(text: string): string {
  if (!CREDENTIAL_SHAPE_HINT.test(text)) return text;
  const keyed = (match: string, prefix: string, value: string) =>
    isShownValue(value) ? match : `${prefix}${REDACTED}`;
  return text
    .replace(URL_PASSWORD, keyed)
    .replace(SECRET_HEADER, keyed)
    .replace(SECRET_ASSIGNMENT, (match, prefix: string, key: string, value: string) =>
      isSecretKey(key) && !isShownValue(value) ? `${prefix}${REDACTED}` : match,
    );
}

/** A value the keyed shapes leave: already redacted, a reference, code or words. */
function isShownValue(value: string): boolean {
  return value.includes(REDACTED) || isSentinel(value) || NOT_A_SECRET.test(value);
}

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
    return SECRET_PATTERN_HINT.test(out) ? redactTokens(out) : out;
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
    // An Error's fields are not enumerable (copied, it was `{}`): its name, message, code and cause.
    if (input instanceof Error) return walk(errorFields(input), key, seen);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(input)) out[k] = walk(v, k, seen);
    return out;
  };

  return { add, string, value: <T>(value: T) => walk(value, undefined, new WeakSet()) as T };
}

function errorFields(error: Error): Record<string, unknown> {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(code !== undefined ? { code } : {}),
    ...(cause !== undefined ? { cause } : {}),
  };
}

/** `keychain:x` and `${ENV}` are references, not secrets: showing them is how provenance is explained. */
export function isSentinel(value: string): boolean {
  return /^keychain:[\w.-]+$/.test(value) || /^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$/.test(value);
}

/** A secret shown only by its last four characters at most (none when short). */
export function maskSecret(secret: string): string {
  if (secret.length < 12) return REDACTED;
  return `${REDACTED}…${secret.slice(-4)}`;
}

// Query parameters that carry a credential: `?token=`, `&api_key=`, `&X-Amz-Signature=`, `&sig=`.
const SECRET_PARAM =
  /(token|secret|passw(or)?d|pwd|(^|[_.-])(key|api_?key|apikey|auth|authorization|sig|signature|credentials?))$/i;
// Flags whose value is a credential: `--api-key x`, `--token=x`, `--db-password x`, `--github-token x`.
const SECRET_FLAG =
  /^--?([a-z0-9]+[-_])*(api[-_]?key|apikey|key|token|secret|password|passwd|pwd|auth|credentials?)$/i;
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/**
 * Every URL in the text with its password and its credential query parameters masked
 * (`https://user:[REDACTED]@host/p?token=[REDACTED]…9f2a&mode=x`): a password whole, a token
 * but its last four characters. For readouts of config values;
 * the runtime keeps the real URL.
 */
export function maskUrlSecrets(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (url) => {
    let out = '';
    let at = 0;
    for (const span of urlSecretSpans(url)) {
      // A password is never shown in part; a token keeps its last four characters to tell it apart.
      out += url.slice(at, span.start) + (span.password ? REDACTED : maskSecret(span.value));
      at = span.end;
    }
    return out + url.slice(at);
  });
}

/** The password and credential query values of every URL in the text, for the redactor to learn. */
export function urlSecrets(text: string): string[] {
  if (!text.includes('://')) return [];
  return [...text.matchAll(URL_IN_TEXT)].flatMap(([url]) =>
    urlSecretSpans(url).flatMap((span) => [span.value, decode(span.value)]),
  );
}

/** A command's arguments with the value of each credential flag masked (`--api-key x`, `--token=x`). */
export function maskSecretArgs(args: readonly string[]): string[] {
  const secret = new Set(secretArgIndexes(args));
  return args.map((arg, i) => {
    if (!secret.has(i)) return arg;
    const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
    return eq > 0 ? `${arg.slice(0, eq + 1)}${maskSecret(arg.slice(eq + 1))}` : maskSecret(arg);
  });
}

/** The values of a command's credential flags, for the redactor to learn. */
export function argSecrets(args: readonly string[]): string[] {
  return secretArgIndexes(args).map((i) => {
    const arg = args[i];
    const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
    return eq > 0 ? arg.slice(eq + 1) : arg;
  });
}

function secretArgIndexes(args: readonly string[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
    if (eq > 0) {
      if (SECRET_FLAG.test(arg.slice(0, eq)) && eq < arg.length - 1) out.push(i);
    } else if (SECRET_FLAG.test(arg) && i + 1 < args.length && !args[i + 1].startsWith('--')) {
      out.push(i + 1);
      i++;
    }
  }
  return out;
}

/** Where a URL's password and credential query values are, in order. */
interface SecretSpan {
  start: number;
  end: number;
  value: string;
  /** The userinfo's password (the rest are query parameters). */
  password?: true;
}

function urlSecretSpans(url: string): SecretSpan[] {
  const spans: SecretSpan[] = [];
  const authorityStart = url.indexOf('://') + 3;
  const authorityEnd = findEnd(url, authorityStart, '/?#');
  const at = url.lastIndexOf('@', authorityEnd - 1);
  if (at >= authorityStart) {
    const colon = url.indexOf(':', authorityStart);
    if (colon >= 0 && colon < at - 1)
      spans.push({ start: colon + 1, end: at, value: url.slice(colon + 1, at), password: true });
  }
  const query = url.indexOf('?', authorityEnd);
  if (query < 0) return spans;
  const queryEnd = findEnd(url, query + 1, '#');
  let start = query + 1;
  while (start < queryEnd) {
    const end = findEnd(url, start, '&#');
    const pair = url.slice(start, Math.min(end, queryEnd));
    const eq = pair.indexOf('=');
    if (eq > 0 && eq < pair.length - 1 && SECRET_PARAM.test(decode(pair.slice(0, eq))))
      spans.push({ start: start + eq + 1, end: start + pair.length, value: pair.slice(eq + 1) });
    start = end + 1;
  }
  return spans;
}

function findEnd(text: string, from: number, stops: string): number {
  for (let i = from; i < text.length; i++) if (stops.includes(text[i])) return i;
  return text.length;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
