/**
 * seedSecrets teaches the redactor the credentials in URLs no key name gives away: a provider's
 * base_url, `[telemetry] otlp_endpoint`, the OTEL_EXPORTER_OTLP_*_ENDPOINT variables (a password,
 * a `?token=`), and the values of the OTEL_EXPORTER_OTLP_*_HEADERS variables.
 */
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createRedactor } from '../redact';
import { loadConfig } from './load';
import { seedSecrets } from './secrets';

describe('seedSecrets', () => {
  it('learns the credentials of provider base URLs, the OTLP endpoint and the OTLP variables', () => {
    const workspace = tmpWorkspace({
      files: {
        'svc.toml': [
          '[providers.local]',
          'type = "openai-compat"',
          'base_url = "http://puser:provurl-pw-1111@127.0.0.1:9/v1?api-key=prov-key-2222"',
          '[telemetry]',
          'otlp_endpoint = "http://otlp:otlp-pw-3333@127.0.0.1:4318/base?token=otlp-token-4444"',
          '',
        ].join('\n'),
      },
    });
    const env = isolatedEnv(workspace, {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/?access_token=env-token-5555',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://u:env-pw-6666@c.example/v1/traces',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://c.example/v1/metrics?sig=env-sig-7777',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=hdr-value-8888,x-other=hdr%20value-9999',
    });
    const redactor = createRedactor();
    seedSecrets(redactor, loadConfig({ workspace, env }), env);
    const secrets = [
      'provurl-pw-1111',
      'prov-key-2222',
      'otlp-pw-3333',
      'otlp-token-4444',
      'env-token-5555',
      'env-pw-6666',
      'env-sig-7777',
      'hdr-value-8888',
      'hdr value-9999',
    ];
    const out = redactor.string(`failed: ${secrets.join(' | ')}`);
    for (const secret of secrets) expect(out).not.toContain(secret);
    expect(out).toContain('[REDACTED]');
  });
});
