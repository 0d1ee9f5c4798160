/**
 * How the run loop records a failure: classified (./failure.ts), redacted, logged with its
 * classified fields, and kept on the run's `error` ledger event. The run row and the
 * `run.finished` event carry the same object (agent-service).
 * @module
 */
import type { Logger } from '../log';
import type { ProviderService } from '../providers/service';
import { providerTimeoutSeconds } from '../providers/timeout';
import type { ResolvedModel } from '../providers/types';
import type { Redactor } from '../redact';
import { classifyProviderError, type Failure, type ProviderContext } from './failure';

/** What recording a failure uses (the App has all of it). */
export interface FailureDeps {
  providers: Pick<ProviderService, 'entry' | 'authHint'>;
  redactor: Redactor;
  log: Logger;
}

/** What the classifier needs to know about the model a run used. */
export function providerContext(app: FailureDeps, model: ResolvedModel): ProviderContext {
  const entry = app.providers.entry(model.provider);
  let authHint: string | undefined;
  try {
    authHint = app.providers.authHint(model.provider);
  } catch {
    authHint = undefined;
  }
  return {
    provider: model.provider,
    model: model.selector,
    baseUrl: entry?.base_url ?? null,
    authHint,
    timeoutSeconds: providerTimeoutSeconds(entry?.config),
    contextWindow: model.info.context_window,
  };
}

/** A provider call that failed: the classified failure (redacted) and the run's error text. */
export function providerFailure(
  app: FailureDeps,
  model: ResolvedModel | undefined,
  error: unknown,
  runId: string,
): { failure: Failure; message: string } {
  const ctx = model ? providerContext(app, model) : {};
  const failure = app.redactor.value(classifyProviderError(error, ctx));
  const message = providerErrorMessage(app, error, model?.provider);
  app.log.warn('provider call failed', {
    run_id: runId,
    code: failure.code,
    summary: failure.summary,
    next: failure.next,
    ...failure.details,
  });
  return { failure, message };
}

/** A failure svc found itself (limit, loop, no model): logged like a provider failure. */
export function recordFailure(app: FailureDeps, failure: Failure, runId: string): Failure {
  const redacted = app.redactor.value(failure);
  app.log.warn('run failed', {
    run_id: runId,
    code: redacted.code,
    summary: redacted.summary,
    next: redacted.next,
    ...redacted.details,
  });
  return redacted;
}

/** Redacted, and naming the provider (the recovery layer's own messages already start with it). */
function providerErrorMessage(app: FailureDeps, error: unknown, provider?: string): string {
  const e = error as { message?: string; statusCode?: number; responseBody?: string };
  const status = typeof e?.statusCode === 'number' ? ` (HTTP ${e.statusCode})` : '';
  const message = (e?.message ?? String(error)).slice(0, 500);
  const named = !provider || message.startsWith(`${provider}:`) ? message : `${provider}: ${message}`;
  return app.redactor.string(`provider error${status}: ${named}`);
}
