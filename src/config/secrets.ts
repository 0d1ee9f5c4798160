/**
 * Every secret a loaded config or the environment holds, taught to a redactor before anything is
 * logged or printed: interpolated values, provider keys and headers, MCP servers' headers,
 * credential flags, URL passwords and env, the services' tokens and the store URL's password.
 * @module
 */
import { argSecrets, type Redactor, urlSecrets } from '../redact';
import { storeUrlPassword } from '../store/store-url';
import type { LoadedConfig } from './load';

const SECRET_ENV = /(_API_KEY|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD|_SESSION_TOKEN)$/;

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
  }
  for (const server of Object.values(loaded.config.mcp)) {
    for (const v of Object.values(server.headers ?? {})) redactor.add(v);
    // Logs, errors and process labels carry the command line and URL too (readouts mask them).
    for (const v of argSecrets(server.args ?? [])) redactor.add(v);
    for (const v of urlSecrets(server.url ?? '')) redactor.add(v);
    for (const [k, v] of Object.entries(server.env ?? {})) if (SECRET_ENV.test(k)) redactor.add(v);
    redactor.add(server.oauth?.client_secret);
  }
  redactor.add(loaded.config.services.http.token);
  redactor.add(loaded.config.services.mcp.token);
  redactor.add(storeUrlPassword(loaded.config.store.url));
}
