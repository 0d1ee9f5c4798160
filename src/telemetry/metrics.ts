/**
 * svc's metrics, one set of instruments fed from the cost ledger, the tool funnel and the run
 * ledger: kept in a prom-client registry (served as Prometheus text at GET /metrics whether or
 * not OTLP is on) and, when telemetry is on, mirrored into OpenTelemetry instruments pushed over
 * OTLP (./otel.ts). Gauges (queue depth, SSE subscribers) are read when scraped or collected, and
 * only then: a reader may be async (the queue depth is a count in the store).
 * @module
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { ModelCallEnd, ModelCallStart } from '../providers/types';

/** What every metrics sink records. */
export interface MetricsSink {
  modelCall(start: ModelCallStart, end: ModelCallEnd): void;
  toolCall(tool: string, status: 'ok' | 'error', seconds: number): void;
  runEnded(status: string): void;
}

export type GaugeName = 'queue_depth' | 'sse_subscribers';

export interface Metrics extends MetricsSink {
  /** Prometheus text exposition format (version 0.0.4). */
  render(): Promise<string>;
  readonly contentType: string;
  /**
   * Register a reading of a gauge (summed across readers; a reader that throws or rejects counts
   * 0). It is called on each read of the gauge, never otherwise.
   */
  gauge(name: GaugeName, read: () => number | Promise<number>): () => void;
  /** Current value of a gauge (a scrape and the OTLP observable gauges read this). */
  read(name: GaugeName): Promise<number>;
  /**
   * Build the registry now (loading prom-client), the recordings waiting replayed into it: a
   * service calls it at start-up, before it is ready, so no request pays the one-off load.
   */
  build(): void;
}

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120];

/** Prometheus text exposition format 0.0.4 (prom-client's `Registry.PROMETHEUS_CONTENT_TYPE`). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * Recordings kept before the registry is built. prom-client (with the OpenTelemetry API it loads)
 * took ~27 ms of every `svc run` that never reads a metric (issue 17), so the registry is built
 * on the first read (`render`, a scrape), once this many recordings wait, which bounds them, or
 * when a service's start-up asks (`build`: ≈ 50 ms that would otherwise land in a request).
 */
const MAX_PENDING = 1000;

interface Instruments {
  registry: PromClient.Registry;
  tokens: PromClient.Counter;
  cost: PromClient.Counter;
  calls: PromClient.Counter;
  ttft: PromClient.Histogram;
  duration: PromClient.Histogram;
  toolCalls: PromClient.Counter;
  toolDuration: PromClient.Histogram;
  runs: PromClient.Counter;
}

function loadPromClient(): typeof PromClient {
  return createRequire(import.meta.url)('prom-client') as typeof PromClient;
}

function buildInstruments(read: (name: GaugeName) => Promise<number>): Instruments {
  const { Counter, Gauge, Histogram, Registry } = loadPromClient();
  const registry = new Registry();
  const tokens = new Counter({
    name: 'svc_model_tokens_total',
    help: 'Tokens of every model call, by direction (input, output), provider, model and purpose.',
    labelNames: ['direction', 'provider', 'model', 'purpose'],
    registers: [registry],
  });
  const cost = new Counter({
    name: 'svc_model_cost_usd_total',
    help: 'Cost in USD of every model call (catalog prices), by provider, model and purpose.',
    labelNames: ['provider', 'model', 'purpose'],
    registers: [registry],
  });
  const calls = new Counter({
    name: 'svc_model_calls_total',
    help: 'Model calls, by provider, model, purpose and status (ok, error).',
    labelNames: ['provider', 'model', 'purpose', 'status'],
    registers: [registry],
  });
  const ttft = new Histogram({
    name: 'svc_model_ttft_seconds',
    help: 'Time to first token of streamed model calls.',
    labelNames: ['provider', 'model'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'svc_model_duration_seconds',
    help: 'Total time of model calls.',
    labelNames: ['provider', 'model', 'purpose'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: 'svc_tool_calls_total',
    help: 'Tool calls, by tool and status (ok, error).',
    labelNames: ['tool', 'status'],
    registers: [registry],
  });
  const toolDuration = new Histogram({
    name: 'svc_tool_duration_seconds',
    help: 'Tool call latency.',
    labelNames: ['tool'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const runs = new Counter({
    name: 'svc_runs_total',
    help: 'Finished agent runs, by outcome (completed, failed, cancelled, …).',
    labelNames: ['status'],
    registers: [registry],
  });
  new Gauge({
    name: 'svc_queue_depth',
    help: 'Prompts queued behind a running run.',
    registers: [registry],
    async collect() {
      this.set(await read('queue_depth'));
    },
  });
  new Gauge({
    name: 'svc_sse_subscribers',
    help: 'Open server-sent event streams.',
    registers: [registry],
    async collect() {
      this.set(await read('sse_subscribers'));
    },
  });

  return { registry, tokens, cost, calls, ttft, duration, toolCalls, toolDuration, runs };
}

export function createMetrics(): Metrics {
  const readers: Record<GaugeName, Set<() => number | Promise<number>>> = {
    queue_depth: new Set(),
    sse_subscribers: new Set(),
  };
  const read = async (name: GaugeName) => {
    const values = await Promise.all(
      // A reader whose source is closed (or away) counts 0.
      [...readers[name]].map(async (r) => {
        try {
          return await r();
        } catch {
          return 0;
        }
      }),
    );
    return values.reduce((total, value) => total + value, 0);
  };
  let instruments: Instruments | undefined;
  const pending: ((i: Instruments) => void)[] = [];
  const built = (): Instruments => {
    if (!instruments) {
      instruments = buildInstruments(read);
      for (const record of pending.splice(0)) record(instruments);
    }
    return instruments;
  };
  const record = (apply: (i: Instruments) => void) => {
    if (instruments) apply(instruments);
    else {
      pending.push(apply);
      if (pending.length >= MAX_PENDING) built();
    }
  };

  return {
    contentType: CONTENT_TYPE,
    render: () => built().registry.metrics(),
    build() {
      built();
    },
    gauge(name, reader) {
      readers[name].add(reader);
      return () => readers[name].delete(reader);
    },
    read,
    modelCall(start, end) {
      // Only the figures: a recording waiting for prom-client must not keep the call's prompt and
      // answer (the whole conversation, once per call: ≈ 5 MB over a 200-message TUI session).
      const { provider, model } = end;
      const purpose = start.purpose;
      const labels = { provider, model, purpose };
      const { input_tokens, output_tokens, status, ttft_ms, duration_ms } = end;
      const usd = end.cost;
      // Label sets as literals, not `{ ...labels, direction }`: on Node 20 a property after a
      // spread goes through V8's runtime and makes the object a map of its own (p-sqlprofile).
      record(({ tokens, cost, calls, ttft, duration }) => {
        tokens.inc({ provider, model, purpose, direction: 'input' }, input_tokens);
        tokens.inc({ provider, model, purpose, direction: 'output' }, output_tokens);
        cost.inc(labels, usd);
        calls.inc({ provider, model, purpose, status });
        if (ttft_ms !== null) ttft.observe({ provider, model }, ttft_ms / 1000);
        duration.observe(labels, duration_ms / 1000);
      });
    },
    toolCall(tool, status, seconds) {
      record(({ toolCalls, toolDuration }) => {
        toolCalls.inc({ tool, status });
        toolDuration.observe({ tool }, seconds);
      });
    },
    runEnded(status) {
      record(({ runs }) => runs.inc({ status }));
    },
  };
}
