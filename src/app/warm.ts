/**
 * The one-off work a serving process does in its start-up, before it is marked ready, rather than
 * in whichever requests come first (issue 17 item 3): the modules a compat request or a run loads
 * on first use (the provider linking and its SDK, the AI SDK and its internals), the registered
 * tools' specs, the metrics registry (prom-client with the OpenTelemetry API it loads, ≈ 50
 * ms, otherwise built at the 1,000th recording, inside a request), the run ledger's recovery of
 * runs whose owner is gone (otherwise at the first request, in its transaction), and the default model's
 * context window where it is learned from an OpenAI-compatible server (stored only when known). `svc run` never comes here: it
 * loads only what it uses. A load that fails is left to the request that needs it, which loads it
 * again and shows the error.
 * @module
 */
import { loadSdk, sdkInternal } from '../agent/step-request';
import type { App } from '../app';
import { learnWindowAhead } from '../providers/context-window';
import { preloadLinking } from '../providers/linked-models';
import { createAgentToolbox } from '../tools/core/agent-toolbox';

/** Loads and builds now what the first requests would; never throws. */
export async function warmService(app: App): Promise<void> {
  // The OpenAI-compatible SDK only where an entry is built with it (the others' SDKs load on use).
  const openAICompatible = app.providers.entries().some((entry) => entry.type === 'openai-compat');
  // The run ledger's first-use recovery now, not in the first request: on PostgreSQL its reads
  // would join that request's start, a transaction then rather than the lone statement, its model
  // request leaving before the COMMIT's answer (STORE-PG-861). The node heartbeats from now on.
  const loads = [preloadLinking(openAICompatible), loadSdk(), sdkInternal(), app.runs.recover()];
  const window = defaultWindow(app).catch((error) =>
    app.log.debug('start-up window look-up failed', { error }),
  );
  try {
    app.telemetry.metrics.build();
    // Every run asks for the registered tools' specs before its first step: their JSON Schemas,
    // converted once per tool definition (≈ 140 tools, ≈ 5 ms), are made now.
    createAgentToolbox(app).registered();
  } catch (error) {
    app.log.debug('start-up build failed', { error });
  }
  const settled = await Promise.allSettled(loads);
  for (const result of settled) {
    if (result.status === 'rejected') app.log.debug('start-up preload failed', { error: result.reason });
  }
  // The window's answer is waited for a little past the loads (a local server answers in a few
  // ms), not for its whole timeout: a server that hangs does not hold the service's ready; the
  // look-up goes on, and a request that comes meanwhile shares it.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    window,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, WINDOW_READY_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
}

/** How long a start-up waits for the default model's window past its other loads (ms). */
export const WINDOW_READY_WAIT_MS = 100;

/**
 * The default model's context window, asked of its server now (bounded by
 * `options.local_probe.window_timeout_ms`; ready waits for it `WINDOW_READY_WAIT_MS` at most) so
 * the first request reads it from the cache; only a known answer is stored (../providers/context-window.ts `learnWindowAhead`).
 */
async function defaultWindow(app: App): Promise<void> {
  const { providers } = app;
  const selection = providers.select({}, { readout: false });
  if (!selection.selector) return;
  const { entry, model } = providers.parse(selection.selector);
  const apiKey = providers.readiness(entry).credential.value;
  await learnWindowAhead(providers.deps, entry, model, { apiKey });
}
