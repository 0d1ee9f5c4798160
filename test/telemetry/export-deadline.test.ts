/**
 * A collector that answers 200 and then writes a byte at a time, forever (the probe's
 * "slowdrip"), never holds svc: each export request ends by an absolute deadline (the exporter's
 * own timeout is an idle one, reset by every byte), and flush() and shutdown() give up after the
 * close deadline, end what is still open and say in svc's log that spans were dropped.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createMemoryLogger } from '../../src/log';
import { createRedactor } from '../../src/redact';
import { createMetrics } from '../../src/telemetry/metrics';
import { createOtel } from '../../src/telemetry/otel';
import { createTelemetry } from '../../src/telemetry/service';

/** A collector on 127.0.0.1 that answers 200 and drips a space every 50 ms until the client goes. */
async function slowdripCollector(): Promise<{ url: string; closed: Promise<void>; requests: () => number }> {
  let requests = 0;
  let onClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    onClosed = resolve;
  });
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      open.add(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 50);
      res.on('close', () => {
        clearInterval(drip);
        open.delete(res);
        onClosed();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const res of open) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, closed, requests: () => requests };
}

// Without the deadlines each test would wait forever: 15 s each fails it instead of the suite's 60 s.
describe('OTLP export deadlines', () => {
  it('an export request a collector drips its answer into ends at its deadline, and flush() returns', async () => {
    const collector = await slowdripCollector();
    const errors: unknown[] = [];
    const otel = createOtel({
      tracesUrl: `${collector.url}/v1/traces`,
      metricsUrl: `${collector.url}/v1/metrics`,
      headers: {},
      serviceName: 'svc-test',
      version: '0',
      metricsIntervalMs: 60_000,
      read: async () => 0,
      onError: (error) => errors.push(error),
      exportDeadlineMs: 300,
    });
    otel.startSpan('one', { attributes: {} }).end();
    await otel.flush();
    await collector.closed;
    expect(collector.requests()).toBeGreaterThan(0);
    await otel.shutdown();
  }, 15_000);

  it('shutdown() gives up at the close deadline, ends the open export and logs that spans were dropped', async () => {
    const collector = await slowdripCollector();
    const log = createMemoryLogger();
    const telemetry = createTelemetry({
      config: () => ({ otlp_endpoint: collector.url }) as never,
      env: {},
      ledger: {} as never,
      metrics: createMetrics(),
      redactor: createRedactor(),
      log,
      clock: { now: () => Date.now() },
      version: '0',
      closeDeadlineMs: 200,
      exportDeadlineMs: 600_000,
    });
    await telemetry.ready();
    expect(telemetry.tracing).toBe(true);
    await telemetry.run(
      { id: 'run_1', session_id: 'ses_1', agent: 'build', origin: 'cli', parent_run_id: null },
      async () => ({
        status: 'completed',
      }),
    );
    await telemetry.shutdown();
    await collector.closed;
    const warning = log.records.find((r) => r.level === 'warn' && r.message.includes('dropped'));
    expect(warning?.message).toBe(
      'telemetry shutdown did not finish within 200 ms: the spans and metrics not yet exported are dropped',
    );
  }, 15_000);
});
