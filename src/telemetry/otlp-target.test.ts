import { describe, expect, it } from 'vitest';
import { otlpTarget } from './service';

describe('otlpTarget', () => {
  it('decodes percent-encoded OTLP headers, and keeps a malformed escape as written instead of throwing', () => {
    const target = otlpTarget({} as never, {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%3Db, x-raw = 100%zz ,bad,=novalue',
    });
    expect(target).toEqual({
      traces: 'http://127.0.0.1:4318/v1/traces',
      metrics: 'http://127.0.0.1:4318/v1/metrics',
      headers: { 'x-api-key': 'a=b', 'x-raw': '100%zz' },
    });
  });
});
