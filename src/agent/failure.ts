/**
 * The one failure classifier: whatever ended a run (or refused a tool call) becomes
 * `{ code, summary, next, details }`. `summary` is one line naming what failed, the provider and
 * the model; `next` is the step that fixes it (a command or a config key); `details` holds what a
 * person debugging it wants (HTTP status, URL, attempts, the provider's own message), one key or
 * flag away on every surface. A wrong key, a wrong URL and a network problem read differently.
 *
 * Pure functions over the error shapes svc meets: the AI SDK's `AI_APICallError` and
 * `AI_RetryError` (read by name, so two loaded copies of the SDK both match), the recovery layer's
 * SvcErrors, undici's network errors (`cause.code`), the provider timeout (`TimeoutError`) and
 * error parts a provider streams. Callers redact the result (see `redactFailure`).
 * @module
 */
import type { FailureReport } from '../errors';
import type { Redactor } from '../redact';

export const FAILURE_CODES = [
  'provider_unauthorized',
  'provider_forbidden',
  'model_not_found',
  'endpoint_not_found',
  'rate_limited',
  'provider_server_error',
  'provider_rejected',
  'context_overflow',
  'connection_refused',
  'dns_failure',
  'provider_timeout',
  'network_error',
  'bad_response',
  'provider_error',
  'model_unavailable',
  'step_limit',
  'loop_detected',
  'budget_exceeded',
  'tool_refused',
  'sandbox_denied',
  'run_error',
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

/** A FailureReport (src/errors.ts) whose code is one of FAILURE_CODES. */
export interface Failure extends FailureReport {
  code: FailureCode;
}

export interface ProviderContext {
  /** Provider id (`fake`, `anthropic`). */
  provider?: string;
  /** The model selector (`fake/m1`). */
  model?: string;
  baseUrl?: string | null;
  /** How to replace a rejected credential (ProviderService.authHint). */
  authHint?: string;
  /** providers.<id>.timeout_seconds in force. */
  timeoutSeconds?: number;
  contextWindow?: number;
}

interface Unwrapped {
  error: unknown;
  status?: number;
  url?: string;
  body?: string;
  headers?: Record<string, string>;
  attempts: number;
  message: string;
  name: string;
  code?: string;
  svcCode?: string;
}

const NETWORK_CODES: Record<string, FailureCode> = {
  ECONNREFUSED: 'connection_refused',
  ConnectionRefused: 'connection_refused',
  ENOTFOUND: 'dns_failure',
  EAI_AGAIN: 'dns_failure',
  EAI_NONAME: 'dns_failure',
  ETIMEDOUT: 'provider_timeout',
  UND_ERR_CONNECT_TIMEOUT: 'provider_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'provider_timeout',
  UND_ERR_BODY_TIMEOUT: 'provider_timeout',
};

const CONTEXT_OVERFLOW =
  /context[_ ]length[_ ]exceeded|maximum context length|context window|context length|prompt is too long|input is too long|too many (input )?tokens|exceeds? (the )?(model'?s? )?(maximum|max|context)|reduce the length of the (messages|prompt)/i;
const TPM = /tokens? per min|\bTPM\b|rate.?limit|quota/i;

/** A provider call that failed (HTTP status, network, timeout, a streamed error part). */
export function classifyProviderError(error: unknown, ctx: ProviderContext): Failure {
  const u = unwrap(error);
  const who = subject(ctx);
  const p = ctx.provider ?? 'the provider';
  const baseUrl = safeUrl(ctx.baseUrl ?? undefined);
  const providerSays = u.message ? `: ${quote(u.message)}` : '';
  const details: Record<string, unknown> = {
    ...(ctx.provider ? { provider: ctx.provider } : {}),
    ...(ctx.model ? { model: ctx.model } : {}),
    ...(baseUrl ? { base_url: baseUrl } : {}),
    ...(u.status !== undefined ? { status: u.status } : {}),
    ...(u.url ? { url: safeUrl(u.url) } : {}),
    ...(u.code ? { error_code: u.code } : {}),
    ...(u.attempts > 1 ? { attempts: u.attempts } : {}),
    error: clip(u.message, 500),
    ...(u.body ? { response: clip(u.body, 500) } : {}),
  };
  const make = (code: FailureCode, summary: string, next: string): Failure => ({
    code,
    summary: `${summary} (${who})`,
    next,
    details,
  });
  const baseUrlKey = `providers.${p}.base_url${baseUrl ? ` (now ${baseUrl})` : ''}`;
  const tries = u.attempts > 1 ? `, ${u.attempts} attempts` : '';
  const text = `${u.message} ${u.body ?? ''}`;

  if (u.name === 'TimeoutError' || (u.code && NETWORK_CODES[u.code] === 'provider_timeout')) {
    const seconds = ctx.timeoutSeconds;
    return make(
      'provider_timeout',
      `no answer from the provider${seconds ? ` within ${seconds} s` : ''}${tries}`,
      `check that the server at ${baseUrl ?? baseUrlKey} is up and not overloaded, or raise providers.${p}.timeout_seconds${seconds ? ` (now ${seconds})` : ''}`,
    );
  }
  if (u.code && NETWORK_CODES[u.code] === 'connection_refused') {
    return make(
      'connection_refused',
      `connection refused: nothing listens at ${hostOf(u.url ?? baseUrl) ?? 'the provider URL'}${tries}`,
      `start the model server, or fix ${baseUrlKey}`,
    );
  }
  if (u.code && NETWORK_CODES[u.code] === 'dns_failure') {
    const host = hostOf(u.url ?? baseUrl);
    return make(
      'dns_failure',
      `the host ${host ?? 'of the provider URL'} does not resolve (DNS lookup failed)${tries}`,
      `fix the host in ${baseUrlKey}, or check the network and DNS of this machine`,
    );
  }
  if ((u.svcCode === 'unauthorized' && u.status !== 403) || u.status === 401) {
    return make(
      'provider_unauthorized',
      `the provider rejected the API key (HTTP ${u.status ?? 401})`,
      `${ctx.authHint ?? `set providers.${p}.api_key or store a key with svc auth token ${p} --token-stdin`}; then svc config show-provider-status`,
    );
  }
  if (u.status === 403) {
    return make(
      'provider_forbidden',
      `the provider refused access (HTTP 403)${providerSays}`,
      `check that the key may use this model (${ctx.authHint ?? `providers.${p}.api_key`}), or pick another model with /model or svc run --model`,
    );
  }
  if (u.status === 429 || u.svcCode === 'rate_limited' || (u.status === 413 && TPM.test(text))) {
    const after = retryAfterSeconds(u.headers);
    return make(
      'rate_limited',
      `rate limited by the provider (HTTP ${u.status ?? 429}${after ? `, retry after ${after} s` : ''}${tries})`,
      'wait and retry, or add fallback models to options.tpm_recovery.provider_model_fallback',
    );
  }
  if (CONTEXT_OVERFLOW.test(text) && (u.status === undefined || (u.status >= 400 && u.status < 500))) {
    const window = ctx.contextWindow ? ` of ${ctx.contextWindow} tokens` : '';
    return make(
      'context_overflow',
      `the conversation no longer fits the model's context window${window}${providerSays}`,
      `compact it with /compact in the TUI, start a new session, or set context_window in providers.${p}.models so svc compacts in time`,
    );
  }
  if (u.svcCode === 'not_found' || (u.status === 404 && /model/i.test(text))) {
    const model = ctx.model?.startsWith(`${p}/`) ? ctx.model.slice(p.length + 1) : ctx.model;
    return make(
      'model_not_found',
      `the provider does not know the model ${model ?? ''} (HTTP 404)`.replace('  ', ' '),
      `list its models with svc models --provider ${p}, then set [models] large = "${p}/<model>" or pick one with /model`,
    );
  }
  if (u.status === 404 || u.status === 405) {
    return make(
      'endpoint_not_found',
      `no model API at ${safeUrl(u.url) ?? baseUrl ?? 'the provider URL'} (HTTP ${u.status})`,
      `fix ${baseUrlKey}; OpenAI-compatible servers usually end in /v1`,
    );
  }
  if (u.status !== undefined && u.status >= 500) {
    return make(
      'provider_server_error',
      `the provider failed on its side (HTTP ${u.status}${tries})${providerSays}`,
      'retry later; if it persists, check the provider status or pick another model with /model or svc run --model',
    );
  }
  if (u.status !== undefined && u.status >= 400) {
    return make(
      'provider_rejected',
      `the provider rejected the request (HTTP ${u.status})${providerSays}`,
      `read the details (svc runs get <run id>); the model may not support tools or an option svc sent (providers.${p}.models)`,
    );
  }
  if (u.code || /fetch failed|cannot connect|socket|ECONNRESET|network/i.test(u.message)) {
    return make(
      'network_error',
      `the connection to the provider failed${u.code ? ` (${u.code})` : ''}${tries}`,
      `check the network (proxy, TLS) to ${hostOf(u.url ?? baseUrl) ?? baseUrlKey}`,
    );
  }
  if (/AI_(InvalidResponseData|JSONParse|TypeValidation|NoContentGenerated)Error/.test(u.name)) {
    return make(
      'bad_response',
      `the provider answered something that is not a model response${providerSays}`,
      `check that ${baseUrlKey} points at the model API (not a web page or proxy)`,
    );
  }
  return make(
    'provider_error',
    `the provider call failed${providerSays}`,
    'read the details (svc runs get <run id>, svc logs --level warn)',
  );
}

/** A failure svc detected itself: a limit, a loop, a missing model, an unexpected error. */
export function runFailure(
  code: 'step_limit' | 'loop_detected' | 'model_unavailable' | 'run_error',
  input: { model?: string | null; message: string; maxSteps?: number; tool?: string; repeats?: number },
): Failure {
  const model = input.model ? ` (model ${input.model})` : '';
  const first = input.message.split('\n')[0];
  switch (code) {
    case 'step_limit':
      return {
        code,
        summary: `step limit reached: ${input.maxSteps ?? '?'} steps and the model was still working${model}`,
        next: 'raise it with svc run --max-steps <n> or options.max_steps in svc.toml, or split the task',
        details: { max_steps: input.maxSteps ?? null, ...(input.model ? { model: input.model } : {}) },
      };
    case 'loop_detected':
      return {
        code,
        summary: `stopped a loop: ${input.tool ?? 'a tool'} was called ${input.repeats ?? '?'} times in a row with the same input and result${model}`,
        next: 'rephrase the prompt, or raise options.loop_detection.max_repeats',
        details: { tool: input.tool ?? null, repeats: input.repeats ?? null, message: input.message },
      };
    case 'model_unavailable':
      return {
        code,
        summary: `no model could be used: ${first}`,
        next: 'svc config show-provider-status says what each provider needs; set [models] large = "<provider>/<model>"',
        details: { message: input.message, ...(input.model ? { model: input.model } : {}) },
      };
    case 'run_error':
      return {
        code,
        summary: `the run failed: ${first}${model}`,
        next: 'read the details (svc runs get <run id>, svc logs --level warn)',
        details: { message: input.message, ...(input.model ? { model: input.model } : {}) },
      };
    default: {
      const never: never = code;
      return never;
    }
  }
}

/** A spend limit of `[budget]` reached: the run does not start. */
export function budgetFailure(input: {
  scope: 'session' | 'day';
  spent: number;
  limit: number;
  sessionId: string;
  day: string;
}): Failure {
  const where = input.scope === 'session' ? `session ${input.sessionId}` : `today (${input.day} UTC)`;
  const key = input.scope === 'session' ? 'budget.session_usd' : 'budget.daily_usd';
  return {
    code: 'budget_exceeded',
    summary: `budget spent: ${where} cost $${input.spent.toFixed(4)} of its $${input.limit.toFixed(2)} limit, so no new run starts`,
    next: `raise ${key} in svc.toml (svc stats --by day shows the spend)${input.scope === 'session' ? ', or start a new session' : ''}`,
    details: { scope: input.scope, spent_usd: input.spent, limit_usd: input.limit, config_key: key },
  };
}

/**
 * A tool call refused by a person, the headless no-one-to-ask rule, the bash rules or the
 * sandbox; undefined for any other tool error (the model reads those and corrects itself).
 */
export function classifyToolError(
  tool: string,
  error: { code: string; message: string; details?: Record<string, unknown> },
): Failure | undefined {
  const details = error.details ?? {};
  const message = clip(error.message.split('\n')[0], 300);
  if (error.code === 'unavailable' && details.sandbox) {
    return {
      code: 'sandbox_denied',
      summary: `${tool} was not run: the sandbox (bwrap) cannot start here`,
      next: 'install bubblewrap (apt-get install bubblewrap), or set options.sandbox.mode = "off"',
      details: { tool, message, ...pick(details, ['sandbox', 'error']) },
    };
  }
  if (error.code !== 'forbidden') return undefined;
  if (details.analysis && typeof details.analysis === 'object') {
    const reason = String((details.analysis as Record<string, unknown>).reason ?? message);
    return {
      code: 'sandbox_denied',
      summary: `${tool} refused by the command rules: ${clip(reason, 160)}`,
      next: 'run it yourself if it is safe; bash rules are permissions.bash_deny and permissions.bash_allow (svc config show-sandbox)',
      details: { tool, message, reason },
    };
  }
  if (details.reason === 'denied') {
    return {
      code: 'tool_refused',
      summary: `${tool} was denied by the operator`,
      next: `allow it for the session when asked again, or add "${tool}" to [permissions].allowed_tools`,
      details: { tool, message, reason: 'denied' },
    };
  }
  if (details.reason === 'unattended' || /no one is attached|no session to ask in/.test(message)) {
    return {
      code: 'tool_refused',
      summary: `${tool} needed permission and no one was there to answer`,
      next: `re-run with --yolo, add "${tool}" to [permissions].allowed_tools, or run it in the TUI`,
      details: { tool, message, reason: 'unattended' },
    };
  }
  return undefined;
}

/**
 * What the OS sandbox stopped while a command ran (a `sandbox_denied` event of
 * src/sandbox/denials.ts: a write outside the workspace, a protected path, the network). The
 * command ran; the line says what it could not do and which key allows it.
 */
export function classifySandboxDenial(tool: string, denial: Record<string, unknown>): Failure {
  const target = typeof denial.target === 'string' && denial.target ? denial.target : undefined;
  const message = typeof denial.message === 'string' ? denial.message : '';
  // The denial's own sentence says how the user allows it ("The user can allow …").
  const allow = /The user can (.+?)(?:;|\.(?:\s|$))/.exec(message)?.[1];
  const details = { tool, kind: denial.kind ?? null, target: target ?? null, message: clip(message, 500) };
  switch (denial.kind) {
    case 'network_off':
      return {
        code: 'sandbox_denied',
        summary: `${tool}: the sandbox has no network (options.sandbox.network = "none")`,
        next: 'set options.sandbox.network = "host" in svc.toml to allow it, or work offline',
        details,
      };
    case 'write_outside_workspace':
      return {
        code: 'sandbox_denied',
        summary: `${tool}: the sandbox blocked a write to ${target ?? 'a path'} outside the workspace`,
        next: allow ? allow.trim() : 'allow the directory with options.sandbox.allow_write in svc.toml',
        details,
      };
    default:
      return {
        code: 'sandbox_denied',
        summary: `${tool}: the sandbox stopped it${target ? ` at ${target}` : ''}`,
        next: allow ? allow.trim() : 'svc config show-sandbox shows what commands may reach',
        details,
      };
  }
}

/** `<summary>; next: <next>`: the one line every surface shows. */
export function failureLine(failure: Pick<Failure, 'summary' | 'next'>): string {
  return `${failure.summary}; next: ${failure.next}`;
}

export function redactFailure(redactor: Redactor, failure: Failure): Failure {
  return redactor.value(failure);
}

function unwrap(error: unknown): Unwrapped {
  let current = error as Record<string, unknown> | undefined;
  let attempts = 1;
  // AI_RetryError: the attempts, and the last error is the one that matters.
  if (current && current.name === 'AI_RetryError' && Array.isArray(current.errors)) {
    attempts = current.errors.length;
    current = (current.lastError ?? current.errors.at(-1)) as Record<string, unknown>;
  }
  const svcCode = isSvcError(current) ? String(current.code) : undefined;
  const top = current;
  // The recovery layer's SvcError keeps the AI SDK error as its cause.
  if (svcCode && current?.cause && typeof current.cause === 'object') {
    current = current.cause as Record<string, unknown>;
  }
  const topStatus = ((top?.details ?? {}) as Record<string, unknown>).status;
  const status =
    typeof current?.statusCode === 'number'
      ? current.statusCode
      : typeof topStatus === 'number'
        ? topStatus
        : undefined;
  return {
    error: current,
    status,
    url: typeof current?.url === 'string' ? current.url : undefined,
    body: typeof current?.responseBody === 'string' ? current.responseBody : undefined,
    headers: (current?.responseHeaders as Record<string, string> | undefined) ?? undefined,
    attempts,
    message: messageOf(svcCode ? top : current),
    name: typeof current?.name === 'string' ? current.name : '',
    code: networkCode(current),
    svcCode,
  };
}

function isSvcError(value: unknown): value is { code: string; message: string; cause?: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[Symbol.for('svc.error')] === true
  );
}

/** undici puts the socket error's code on `cause` (sometimes nested, or in an AggregateError). */
function networkCode(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  let current = error as Record<string, unknown> | undefined;
  while (current && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    if (typeof current.code === 'string' && current.code in NETWORK_CODES) return current.code;
    if (typeof current.code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(current.code))
      return current.code;
    if (Array.isArray(current.errors) && current.errors.length) {
      const inner = networkCode(current.errors[0]);
      if (inner) return inner;
    }
    current = current.cause as Record<string, unknown> | undefined;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  if (error === undefined || error === null) return '';
  if (typeof error === 'string') return error;
  const e = error as { message?: unknown; error?: { message?: unknown } };
  if (typeof e.message === 'string') return e.message;
  if (typeof e.error?.message === 'string') return e.error.message;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

function subject(ctx: ProviderContext): string {
  if (ctx.provider && ctx.model) return `provider ${ctx.provider}, model ${ctx.model}`;
  if (ctx.model) return `model ${ctx.model}`;
  return ctx.provider ? `provider ${ctx.provider}` : 'the model provider';
}

/** A URL without credentials or query (either may hold a secret). */
export function safeUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/\?.*$/, '');
  }
}

function hostOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

function retryAfterSeconds(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const value = Object.entries(headers).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
  if (value === undefined || !/^\d+(\.\d+)?$/.test(value.trim())) return undefined;
  return Math.ceil(Number(value));
}

function quote(message: string): string {
  return `"${clip(message.split('\n')[0].trim(), 120)}"`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function pick(record: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => record[k] !== undefined).map((k) => [k, record[k]]));
}
