/**
 * The ModelResolver (`app.models`) is built by the provider service (service.ts): catalog,
 * credentials, cloud identity, OAuth sessions, vendor CLI and ACP children, selection and
 * rate-limit recovery behind the contract of types.ts. This module keeps the selector helper
 * other parts import.
 * @module
 */
/** `<provider>/<model>` split at the first slash (the model may contain more slashes). */
export function parseSelector(selector: string): { provider: string; model: string } | undefined {
  const slash = selector.indexOf('/');
  if (slash <= 0 || slash === selector.length - 1) return undefined;
  return { provider: selector.slice(0, slash), model: selector.slice(slash + 1) };
}
