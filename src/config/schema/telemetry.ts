/**
 * `[telemetry]` and `[budget]`: OpenTelemetry export and spend limits.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const telemetrySchema = lazy(() =>
  z.strictObject({
    otlp_endpoint: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        'OTLP/HTTP base URL (traces go to <url>/v1/traces, metrics to <url>/v1/metrics). Unset, the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT variables turn telemetry on; neither, it is off and no OpenTelemetry code loads.',
      ),
    include_content: z
      .boolean()
      .default(false)
      .describe('Put prompts, model answers and tool inputs/results (redacted, truncated) on spans.'),
    service_name: z.string().min(1).default('svc').describe('service.name of the exported resource.'),
    metrics_interval_ms: z
      .number()
      .int()
      .min(100)
      .default(15_000)
      .describe('How often metrics are pushed over OTLP.'),
  }),
);

export const budgetSchema = lazy(() =>
  z.strictObject({
    session_usd: z
      .number()
      .positive()
      .optional()
      .describe(
        'Spend limit per session (its model calls, USD from the catalog): new runs stop once it is reached.',
      ),
    daily_usd: z
      .number()
      .positive()
      .optional()
      .describe('Spend limit per UTC day across every session: new runs stop once it is reached.'),
  }),
);
