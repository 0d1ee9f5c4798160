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

  it('appends /v1/<signal> to the path of the base URL and keeps its query after it', () => {
    expect(otlpTarget({ otlp_endpoint: 'http://127.0.0.1:4318/base/?token=abc' } as never, {})).toMatchObject(
      {
        traces: 'http://127.0.0.1:4318/base/v1/traces?token=abc',
        metrics: 'http://127.0.0.1:4318/base/v1/metrics?token=abc',
      },
    );
    expect(
      otlpTarget({} as never, {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example?api_key=k1',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://m.example/custom?x=1',
      }),
    ).toMatchObject({
      traces: 'https://c.example/v1/traces?api_key=k1',
      metrics: 'https://m.example/custom?x=1',
    });
  });
});
