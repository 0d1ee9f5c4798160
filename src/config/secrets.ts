/**
 * Every secret a loaded config or the environment holds, taught to a redactor before anything is
 * logged or printed: interpolated values, provider keys, headers and base URL credentials, MCP
 * servers' headers, credential flags, URL passwords and env, the OTLP endpoints' URL credentials
 * and headers, the services' tokens and the store URL's password.
 * @module
 */
import { argSecrets, type Redactor, urlSecrets } from '../redact';
import { storeUrlPassword } from '../store/store-url';
import { SECRET_ENV } from './issue-scrub';
import type { LoadedConfig } from './load';

/** The standard OTLP variables whose URL may carry a password or a `?token=` (../telemetry/service.ts). */
const OTLP_ENDPOINT_ENV = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
];
/** The standard OTLP variables of `name=value,…` headers, each value a credential as a rule. */
const OTLP_HEADERS_ENV = [
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_METRICS_HEADERS',
];

export function seedSecrets(
  redactor: Redactor,
  loaded: LoadedConfig,
  env: Record<string, string | undefined>,
) {
  for (const value of loaded.interpolated) redactor.add(value);
  for (const [name, value] of Object.entries(env)) if (SECRET_ENV.test(name)) redactor.add(value);
  for (const provider of Object.values(loaded.config.providers)) {
    if (provider.api_key && !provider.api_key.startsWith('keychain:')) redactor.add(provider.api_key);
    for (const v of Object.values(provider.headers ?? {})) redactor.add(v);
    // The URL is in errors, run results and spans (`http://user:pw@…`, `?api-key=…`).
    for (const v of urlSecrets(provider.base_url ?? '')) redactor.add(v);
  }
  for (const server of Object.values(loaded.config.mcp)) {
    for (const v of Object.values(server.headers ?? {})) redactor.add(v);
    // Logs, errors and process labels carry the command line and URL too (readouts mask them).
    for (const v of argSecrets(server.args ?? [])) redactor.add(v);
    for (const v of urlSecrets(server.url ?? '')) redactor.add(v);
    for (const [k, v] of Object.entries(server.env ?? {})) if (SECRET_ENV.test(k)) redactor.add(v);
    redactor.add(server.oauth?.client_secret);
  }
  // The endpoint is logged when telemetry starts and quoted by export errors.
  for (const v of urlSecrets(loaded.config.telemetry.otlp_endpoint ?? '')) redactor.add(v);
  for (const name of OTLP_ENDPOINT_ENV) for (const v of urlSecrets(env[name] ?? '')) redactor.add(v);
  for (const name of OTLP_HEADERS_ENV) for (const v of headerValues(env[name])) redactor.add(v);
  redactor.add(loaded.config.services.http.token);
  redactor.add(loaded.config.services.mcp.token);
  redactor.add(storeUrlPassword(loaded.config.store.url));
}

/** The values of a `name=value,…` header list, as written and percent-decoded. */
function headerValues(spec: string | undefined): string[] {
  return (spec ?? '').split(',').flatMap((pair) => {
    const value = pair.slice(pair.indexOf('=') + 1).trim();
    if (!pair.includes('=') || !value) return [];
    try {
      return [value, decodeURIComponent(value)];
    } catch {
      return [value];
    }
  });
}
