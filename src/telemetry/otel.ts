/**
 * The OpenTelemetry side of telemetry, loaded with `await import()` only when telemetry is on
 * (so an svc without an OTLP endpoint never loads OpenTelemetry code): a tracer provider with a
 * batch processor and the OTLP/HTTP trace exporter, a meter provider pushing svc's metrics with
 * the OTLP/HTTP metric exporter, and the W3C trace context propagator for incoming requests.
 * @module
 */

import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  type Attributes,
  type Context,
  context as contextApi,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { GaugeName, MetricsSink } from './metrics';

export interface OtelOptions {
  tracesUrl: string;
  metricsUrl: string;
  headers: Record<string, string>;
  serviceName: string;
  version: string;
  metricsIntervalMs: number;
  read(name: GaugeName): Promise<number>;
  onError(error: unknown): void;
  /** How long one export request may take in all, response included (EXPORT_DEADLINE_MS). */
  exportDeadlineMs?: number;
}

/** The longest one OTLP export request may take, first byte to last (the exporter's timeout too). */
export const EXPORT_DEADLINE_MS = 10_000;

/** An opaque parent: a span's context as the OpenTelemetry API sees it. */
export type SpanParent = Context;

export interface OtelSpan {
  readonly context: SpanParent;
  set(attributes: Record<string, string | number | boolean | undefined>): void;
  end(status?: { error?: string }): void;
}

export interface Otel {
  startSpan(
    name: string,
    options: { parent?: SpanParent; kind?: 'server' | 'client' | 'internal'; attributes: Attributes },
  ): OtelSpan;
  /** The caller's W3C trace context (traceparent, tracestate) as a parent, if it sent one. */
  extract(headers: Headers): SpanParent | undefined;
  readonly metrics: MetricsSink;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
  /** Ends every export request still open now (after a flush or shutdown ran out of time). */
  abort(): void;
}

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

export function createOtel(options: OtelOptions): Otel {
  const resource = resourceFromAttributes({
    'service.name': options.serviceName,
    'service.version': options.version,
  });
  const deadlineMs = options.exportDeadlineMs ?? EXPORT_DEADLINE_MS;
  const agents: HttpAgent[] = [];
  const exporterOptions = (url: string) => ({
    url,
    headers: options.headers,
    timeoutMillis: deadlineMs,
    httpAgentOptions: (protocol: string) => {
      const agent = deadlineAgent(protocol, deadlineMs);
      agents.push(agent);
      return agent;
    },
  });
  const traceExporter = new OTLPTraceExporter(exporterOptions(options.tracesUrl));
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(traceExporter, { scheduledDelayMillis: 1000 })],
  });
  const tracer = tracerProvider.getTracer('svc', options.version);
  const metricExporter = new OTLPMetricExporter(exporterOptions(options.metricsUrl));
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: metricExporter,
        exportIntervalMillis: options.metricsIntervalMs,
        exportTimeoutMillis: Math.min(options.metricsIntervalMs, 30_000),
      }),
    ],
  });
  const meter = meterProvider.getMeter('svc', options.version);
  const propagator = new W3CTraceContextPropagator();

  const tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
    unit: '{token}',
    description: 'Tokens of each model call (gen_ai.token.type: input, output).',
  });
  const tokens = meter.createCounter('svc.model.tokens', { unit: '{token}', description: 'Model tokens.' });
  const cost = meter.createCounter('svc.model.cost', {
    unit: 'USD',
    description: 'Model cost (catalog prices).',
  });
  const operation = meter.createHistogram('gen_ai.client.operation.duration', {
    unit: 's',
    description: 'Total time of model calls.',
  });
  const ttft = meter.createHistogram('gen_ai.server.time_to_first_token', {
    unit: 's',
    description: 'Time to first token of streamed model calls.',
  });
  const toolCalls = meter.createCounter('svc.tool.calls', { description: 'Tool calls by status.' });
  const toolDuration = meter.createHistogram('svc.tool.duration', {
    unit: 's',
    description: 'Tool latency.',
  });
  const runs = meter.createCounter('svc.runs', { description: 'Finished agent runs by outcome.' });
  meter
    .createObservableGauge('svc.queue.depth', { description: 'Prompts queued behind a running run.' })
    .addCallback(async (result) => result.observe(await options.read('queue_depth')));
  meter
    .createObservableGauge('svc.sse.subscribers', { description: 'Open server-sent event streams.' })
    .addCallback(async (result) => result.observe(await options.read('sse_subscribers')));

  const getter = {
    keys: (carrier: Headers) => {
      const keys: string[] = [];
      carrier.forEach((_value, key) => {
        keys.push(key);
      });
      return keys;
    },
    get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  };

  return {
    startSpan(name, spanOptions) {
      const parent = spanOptions.parent ?? contextApi.active();
      const span: Span = tracer.startSpan(
        name,
        { kind: KINDS[spanOptions.kind ?? 'internal'], attributes: spanOptions.attributes },
        parent,
      );
      const own = trace.setSpan(parent, span);
      let ended = false;
      return {
        context: own,
        set(attributes) {
          for (const [key, value] of Object.entries(attributes))
            if (value !== undefined) span.setAttribute(key, value);
        },
        end(status) {
          if (ended) return;
          ended = true;
          if (status?.error) span.setStatus({ code: SpanStatusCode.ERROR, message: status.error });
          span.end();
        },
      };
    },
    extract(headers) {
      if (!headers.get('traceparent')) return undefined;
      const extracted = propagator.extract(contextApi.active(), headers, getter);
      return trace.getSpanContext(extracted) ? extracted : undefined;
    },
    metrics: {
      modelCall(start, end) {
        const attrs = {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': end.provider,
          'gen_ai.request.model': end.model,
          'svc.purpose': start.purpose,
        };
        tokenUsage.record(end.input_tokens, { ...attrs, 'gen_ai.token.type': 'input' });
        tokenUsage.record(end.output_tokens, { ...attrs, 'gen_ai.token.type': 'output' });
        tokens.add(end.input_tokens, { ...attrs, 'gen_ai.token.type': 'input' });
        tokens.add(end.output_tokens, { ...attrs, 'gen_ai.token.type': 'output' });
        cost.add(end.cost, attrs);
        operation.record(end.duration_ms / 1000, {
          ...attrs,
          ...(end.status === 'error' ? { 'error.type': 'model_error' } : {}),
        });
        if (end.ttft_ms !== null) ttft.record(end.ttft_ms / 1000, attrs);
      },
      toolCall(tool, status, seconds) {
        toolCalls.add(1, { 'gen_ai.tool.name': tool, status });
        toolDuration.record(seconds, { 'gen_ai.tool.name': tool });
      },
      runEnded(status) {
        runs.add(1, { status });
      },
    },
    async flush() {
      await Promise.all([tracerProvider.forceFlush(), meterProvider.forceFlush()]).catch(options.onError);
    },
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]).catch(options.onError);
    },
    abort() {
      for (const agent of agents) agent.destroy();
    },
  };
}

/**
 * An agent whose every request ends by an absolute deadline. The exporter's own timeout is an idle
 * timeout (`req.setTimeout`), reset by every byte: a collector that answered 200 and then wrote a
 * byte every half second held the export, and with it `svc run`'s exit, forever. One socket per
 * request (no keep-alive), destroyed at the deadline; the exporter then counts the export failed.
 */
function deadlineAgent(protocol: string, deadlineMs: number): HttpAgent {
  const agent =
    protocol === 'https:' ? new HttpsAgent({ keepAlive: false }) : new HttpAgent({ keepAlive: false });
  const connect = agent.createConnection.bind(agent) as HttpAgent['createConnection'];
  agent.createConnection = (connectOptions, callback) => {
    const socket = connect(connectOptions, callback);
    if (socket) {
      const timer = setTimeout(() => {
        socket.destroy(
          Object.assign(new Error(`OTLP export took over ${deadlineMs} ms`), { code: 'ETIMEDOUT' }),
        );
      }, deadlineMs);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
    }
    return socket;
  };
  return agent;
}
