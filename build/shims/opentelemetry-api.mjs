// Build shim (tsdown.config.ts): the part of @opentelemetry/api the `ai` package calls when
// telemetry is off, which is always in svc (no run sets experimental_telemetry): no context
// manager (a callback runs as is), span status codes, and a tracer that records nothing.
const ROOT = Object.freeze({
  getValue: () => undefined,
  setValue() {
    return ROOT;
  },
  deleteValue() {
    return ROOT;
  },
});
export const SpanStatusCode = Object.freeze({ UNSET: 0, OK: 1, ERROR: 2 });
export const context = {
  active: () => ROOT,
  with: (_ctx, fn, thisArg, ...args) => fn.call(thisArg, ...args),
};
const span = {
  spanContext: () => ({ traceId: '', spanId: '', traceFlags: 0 }),
  setAttribute: () => span,
  setAttributes: () => span,
  addEvent: () => span,
  addLink: () => span,
  addLinks: () => span,
  setStatus: () => span,
  updateName: () => span,
  end: () => {},
  isRecording: () => false,
  recordException: () => {},
};
const tracer = {
  startSpan: () => span,
  startActiveSpan: (_name, ...rest) => rest[rest.length - 1](span),
};
export const trace = { getTracer: () => tracer };
