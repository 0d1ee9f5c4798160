/**
 * The provider types that speak one HTTP API with a plain key, in a module of their own: the
 * catalog guard reads them and is itself imported by the catalog, so nothing here imports back.
 * @module
 */
/**
 * Provider types that speak one HTTP API with a plain key (or none): no refreshing token, cloud
 * identity or child process. Their models are built once and reused (build-model.ts), and they
 * are the only types a refreshed catalog may add a provider of (catalog-guard.ts).
 */
export const PLAIN_KEY_TYPES: ReadonlySet<string> = new Set<string>([
  'anthropic',
  'anthropic-compat',
  'openai',
  'openai-compat',
  'google',
  'openrouter',
  'groq',
  'mistral',
  'xai',
  'deepseek',
  'cerebras',
  'togetherai',
  'fireworks',
  'deepinfra',
  'huggingface',
]);
