/**
 * The telemetry domain (`app.telemetry`): the cost ledger (always), metrics (always, as
 * Prometheus text; over OTLP when on) and traces (only when on). Telemetry is on with
 * `[telemetry] otlp_endpoint` or the standard OTEL_EXPORTER_OTLP_* variables; off, no
 * OpenTelemetry module is imported. Spans: one per HTTP request (server, W3C trace context from
 * the caller), per agent run (`invoke_agent`), per model call (`chat`, GenAI semantic
 * conventions) and per tool call (`execute_tool`), parented run → steps → tools. Prompt and tool
 * content goes on spans only with `[telemetry] include_content = true`, redacted and truncated.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { TelemetryConfig } from '../config/schema';
import type { Logger } from '../log';
import type { ModelCallEnd, ModelCallSink, ModelCallStart } from '../providers/types';
import { maskUrlSecrets, type Redactor, redactCredentialShapes } from '../redact';
import type { Clock } from '../util/ids';
import type { CostLedger } from './cost-ledger';
import type { Metrics } from './metrics';
import type { Otel, OtelSpan, SpanParent } from './otel';

export interface TelemetryDeps {
  config: () => TelemetryConfig;
  env: Readonly<Record<string, string | undefined>>;
  ledger: CostLedger;
  metrics: Metrics;
  redactor: Redactor;
  log: Logger;
  clock: Clock;
  version: string;
  /** How long flush() and shutdown() wait for the export (CLOSE_DEADLINE_MS; tests pass less). */
  closeDeadlineMs?: number;
  /** How long one export request may take in all (./otel.ts EXPORT_DEADLINE_MS; tests pass less). */
  exportDeadlineMs?: number;
}

export interface RunInfo {
  id: string;
  session_id: string;
  agent: string;
  origin: string;
  parent_run_id: string | null;
}

export interface ToolCallInfo {
  tool: string;
  surface: string;
  sessionId?: string;
  runId?: string;
  toolCallId?: string;
  input: unknown;
}

export interface Telemetry {
  /** Where OTLP goes (traces URL), or null when telemetry is off. */
  readonly endpoint: string | null;
  readonly ledger: CostLedger;
  readonly metrics: Metrics;
  /** The sink every model call reports to: ledger row, metrics, a `chat` span. */
  readonly calls: ModelCallSink;
  /** Whether spans are made now (the OpenTelemetry SDK is loaded): without, `http` adds nothing. */
  readonly tracing: boolean;
  /** Resolves once the OpenTelemetry SDK is loaded (at once when off). */
  ready(): Promise<void>;
  run<T extends { status: string; failure?: { code: string } | null }>(
    run: RunInfo,
    fn: () => Promise<T>,
  ): Promise<T>;
  /** `read` says how the call ended: its error code, or its output (put on the span only with content on). */
  tool<T>(
    call: ToolCallInfo,
    fn: () => Promise<T>,
    read: (result: T) => { error?: string; output?: unknown },
  ): Promise<T>;
  http(
    request: { method: string; path: string; headers: Headers },
    fn: () => Promise<Response>,
  ): Promise<Response>;
  /** Export what is buffered now (tests, `svc run` before it exits). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const CONTENT_LIMIT = 8_000;
/**
 * The longest flush() or shutdown() waits for the collector: `svc run` shuts telemetry down before
 * it exits, and a collector that never finishes its answer held it there for good.
 */
export const CLOSE_DEADLINE_MS = 3_000;

/** The OTLP trace and metric URLs and headers from `[telemetry]` and the OTEL_* variables. */
export function otlpTarget(
  config: TelemetryConfig,
  env: Readonly<Record<string, string | undefined>>,
): { traces: string; metrics: string; headers: Record<string, string> } | undefined {
  const get = (name: string) => env[name]?.trim() || undefined;
  if (get('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const base = config.otlp_endpoint ?? get('OTEL_EXPORTER_OTLP_ENDPOINT');
  const traces = config.otlp_endpoint
    ? signalUrl(config.otlp_endpoint, 'traces')
    : (get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? (base ? signalUrl(base, 'traces') : undefined));
  const metrics = config.otlp_endpoint
    ? signalUrl(config.otlp_endpoint, 'metrics')
    : (get('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') ?? (base ? signalUrl(base, 'metrics') : undefined));
  if (!traces && !metrics) return undefined;
  return {
    traces: traces ?? signalUrl(base ?? '', 'traces'),
    metrics: metrics ?? signalUrl(base ?? '', 'metrics'),
    headers: parseHeaders(get('OTEL_EXPORTER_OTLP_HEADERS')),
  };
}

/**
 * A signal's URL under a base: `/v1/traces` appended to the path, the query kept after it
 * (`http://h/base?token=x` → `http://h/base/v1/traces?token=x`, where text joined made
 * `…?token=x/v1/traces`). A base that is no URL is joined as text (the exporter says it is wrong).
 */
function signalUrl(base: string, signal: 'traces' | 'metrics'): string {
  try {
    const url = new URL(base);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/${signal}`;
    return url.toString();
  } catch {
    return `${base.replace(/\/+$/, '')}/v1/${signal}`;
  }
}

function parseHeaders(spec: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (spec ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    headers[decodeLenient(pair.slice(0, eq).trim())] = decodeLenient(pair.slice(eq + 1).trim());
  }
  return headers;
}

/**
 * A percent-encoded header name or value (the OTLP exporter convention), as written when it does
 * not decode: a stray `%` in a token is the user's value, not a reason for svc not to start
 * (`decodeURIComponent` threw, and every command ended in "internal error: URI malformed").
 */
function decodeLenient(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function createTelemetry(deps: TelemetryDeps): Telemetry {
  const { ledger, metrics, redactor } = deps;
  const target = otlpTarget(deps.config(), deps.env);
  let otel: Otel | undefined;
  const loading: Promise<void> = target
    ? import('./otel')
        .then(({ createOtel }) => {
          const config = deps.config();
          otel = createOtel({
            tracesUrl: target.traces,
            metricsUrl: target.metrics,
            headers: target.headers,
            serviceName: config.service_name,
            version: deps.version,
            metricsIntervalMs: config.metrics_interval_ms,
            read: (name) => metrics.read(name),
            onError: (error) => deps.log.warn('telemetry export failed', { error }),
            exportDeadlineMs: deps.exportDeadlineMs,
          });
          deps.log.info('telemetry on', {
            traces: maskUrlSecrets(target.traces),
            metrics: maskUrlSecrets(target.metrics),
          });
        })
        .catch((error) => deps.log.warn('telemetry could not start; continuing without it', { error }))
    : Promise.resolve();

  // The span the current async work belongs to (an HTTP request, a run, a tool call).
  const active = new AsyncLocalStorage<SpanParent>();
  // The latest model call span of each run: the parent of the tool calls it asked for.
  const runSpans = new Map<string, { run: SpanParent; step?: SpanParent }>();
  // Content and statuses leave redacted and with every URL's password and credential parameters
  // masked. An object is redacted before it is serialized: its lines are still lines, and a field
  // whose name says secret is masked.
  const content = (value: unknown): string | undefined => {
    if (!deps.config().include_content || value === undefined) return undefined;
    const text = maskUrlSecrets(
      typeof value === 'string'
        ? redactCredentialShapes(redactor.string(value))
        : safeJson(redactor.value(value), shapesRedacted),
    );
    return text.length > CONTENT_LIMIT ? `${text.slice(0, CONTENT_LIMIT)}…` : text;
  };

  const calls = createCallSink(deps, () => otel, runSpans, active, content);

  const spanned = <T>(span: OtelSpan | undefined, fn: () => Promise<T>): Promise<T> =>
    span ? active.run(span.context, fn) : fn();

  return {
    get endpoint() {
      return target?.traces ?? null;
    },
    get tracing() {
      return otel !== undefined;
    },
    ledger,
    metrics,
    calls,
    ready: () => loading,
    async run<T extends { status: string; failure?: { code: string } | null }>(
      run: RunInfo,
      fn: () => Promise<T>,
    ): Promise<T> {
      const parentRun = run.parent_run_id ? runSpans.get(run.parent_run_id) : undefined;
      const span = otel?.startSpan(`invoke_agent ${run.agent}`, {
        parent: active.getStore() ?? parentRun?.step ?? parentRun?.run,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': run.agent,
          'gen_ai.conversation.id': run.session_id,
          'svc.run.id': run.id,
          'svc.session.id': run.session_id,
          'svc.run.origin': run.origin,
          ...(run.parent_run_id ? { 'svc.run.parent_id': run.parent_run_id } : {}),
        },
      });
      if (span) runSpans.set(run.id, { run: span.context });
      let outcome: T | undefined;
      try {
        outcome = await spanned(span, fn);
        return outcome;
      } finally {
        const status = outcome?.status ?? 'failed';
        metrics.runEnded(status);
        otel?.metrics.runEnded(status);
        runSpans.delete(run.id);
        span?.set({ 'svc.run.status': status, 'svc.failure.code': outcome?.failure?.code });
        span?.end(status === 'failed' ? { error: outcome?.failure?.code ?? 'failed' } : undefined);
      }
    },
    async tool(call, fn, read) {
      const run = call.runId ? runSpans.get(call.runId) : undefined;
      const started = deps.clock.now();
      const span = otel?.startSpan(`execute_tool ${call.tool}`, {
        parent: run?.step ?? run?.run ?? active.getStore(),
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': call.tool,
          'svc.surface': call.surface,
          ...(call.toolCallId ? { 'gen_ai.tool.call.id': call.toolCallId } : {}),
          ...(call.sessionId ? { 'svc.session.id': call.sessionId } : {}),
          ...(call.runId ? { 'svc.run.id': call.runId } : {}),
        },
      });
      span?.set({ 'gen_ai.tool.call.arguments': content(call.input) });
      let error: string | undefined = 'tool threw';
      try {
        const result = await spanned(span, fn);
        const ended = read(result);
        error = ended.error;
        if (!error) span?.set({ 'gen_ai.tool.call.result': content(ended.output) });
        return result;
      } finally {
        const seconds = Math.max(0, deps.clock.now() - started) / 1000;
        metrics.toolCall(call.tool, error ? 'error' : 'ok', seconds);
        otel?.metrics.toolCall(call.tool, error ? 'error' : 'ok', seconds);
        span?.end(error ? { error: scrub(redactor, error) } : undefined);
      }
    },
    async http(request, fn) {
      if (!otel) return fn();
      const span = otel.startSpan(`${request.method} ${request.path}`, {
        parent: otel.extract(request.headers),
        kind: 'server',
        attributes: { 'http.request.method': request.method, 'url.path': request.path },
      });
      try {
        const response = await active.run(span.context, fn);
        span.set({ 'http.response.status_code': response.status });
        span.end(response.status >= 500 ? { error: `HTTP ${response.status}` } : undefined);
        return response;
      } catch (error) {
        span.end({ error: 'request failed' });
        throw error;
      }
    },
    async flush() {
      await loading;
      if (otel) await withinDeadline(deps, otel, 'flush', otel.flush());
    },
    async shutdown() {
      await loading;
      if (otel) await withinDeadline(deps, otel, 'shutdown', otel.shutdown());
    },
  };
}

/**
 * `work` (a flush or shutdown) or, past the close deadline, its requests ended and a warning in
 * svc's log (never stdout) that what was not yet exported is dropped.
 */
async function withinDeadline(deps: TelemetryDeps, otel: Otel, what: string, work: Promise<void>) {
  const ms = deps.closeDeadlineMs ?? CLOSE_DEADLINE_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  const outcome = await Promise.race([work.then(() => 'done' as const), late]);
  clearTimeout(timer);
  if (outcome === 'done') return;
  otel.abort();
  deps.log.warn(
    `telemetry ${what} did not finish within ${ms} ms: the spans and metrics not yet exported are dropped`,
    { deadline_ms: ms },
  );
}

/** The sink every model call reports to: a ledger row, metrics, and a `chat` span when on. */
function createCallSink(
  deps: TelemetryDeps,
  getOtel: () => Otel | undefined,
  runSpans: Map<string, { run: SpanParent; step?: SpanParent }>,
  active: AsyncLocalStorage<SpanParent>,
  content: (value: unknown) => string | undefined,
): ModelCallSink {
  return {
    start(call: ModelCallStart) {
      const run = call.run_id ? runSpans.get(call.run_id) : undefined;
      const span = getOtel()?.startSpan(`chat ${call.model}`, {
        parent: run?.run ?? active.getStore(),
        kind: 'client',
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': call.provider,
          'gen_ai.system': call.provider,
          'gen_ai.request.model': call.model,
          'svc.purpose': call.purpose,
          ...(call.session_id
            ? { 'gen_ai.conversation.id': call.session_id, 'svc.session.id': call.session_id }
            : {}),
          ...(call.run_id ? { 'svc.run.id': call.run_id } : {}),
        },
      });
      if (span && run) run.step = span.context;
      if (span) span.set({ 'gen_ai.input.messages': content(call.prompt) });
      return {
        async end(end: ModelCallEnd) {
          try {
            await deps.ledger.record(call, end);
          } catch (error) {
            deps.log.warn('cost ledger write failed', { error });
          }
          deps.metrics.modelCall(call, end);
          getOtel()?.metrics.modelCall(call, end);
          if (!span) return;
          span.set({
            'gen_ai.response.model': end.model,
            'gen_ai.usage.input_tokens': end.input_tokens,
            'gen_ai.usage.output_tokens': end.output_tokens,
            'gen_ai.usage.reasoning_tokens': end.reasoning_tokens,
            'gen_ai.usage.cached_input_tokens': end.cached_input_tokens,
            'svc.cost_usd': end.cost,
            'svc.ttft_ms': end.ttft_ms ?? undefined,
            'gen_ai.output.messages': content(end.output),
          });
          span.end(
            end.status === 'error'
              ? { error: scrub(deps.redactor, end.error ?? 'model call failed') }
              : undefined,
          );
        },
      };
    },
  };
}

/** A span's status message: redacted, credentials given by their context and URL ones masked. */
function scrub(redactor: Redactor, text: string): string {
  return maskUrlSecrets(redactCredentialShapes(redactor.string(text)));
}

/** A JSON.stringify replacer: each string with its credential shapes redacted (its lines are still lines). */
function shapesRedacted(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? redactCredentialShapes(value) : value;
}

function safeJson(value: unknown, replacer?: (key: string, value: unknown) => unknown): string {
  try {
    return JSON.stringify(value, replacer) ?? '';
  } catch {
    return '[unserializable]';
  }
}
