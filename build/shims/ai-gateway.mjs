// Build shim (tsdown.config.ts): `ai` imports the Vercel AI Gateway provider (and with it an OIDC
// client) only to serve models named by a bare string. svc always hands the SDK a model object,
// so the gateway stays out of the bundle; reaching it is a bug, reported as one.
const unavailable = () => {
  throw new Error('svc: the Vercel AI Gateway provider is not bundled; configure a provider in svc.toml');
};
export const createGateway = () => unavailable;
export const gateway = new Proxy(unavailable, { get: () => unavailable });
// `ai` checks every provider error against the gateway's error classes; without the gateway no
// error is one of them.
class NeverGatewayError extends Error {
  static isInstance() {
    return false;
  }
}
export const GatewayError = NeverGatewayError;
export const GatewayAuthenticationError = NeverGatewayError;
