/**
 * The language model callers get: the provider's model wrapped so that failures are handled
 * where they happen, invisibly to the agent loop and the compat surface.
 * - A 429 / token-per-minute error moves the call to the next selector of
 *   `options.tpm_recovery.provider_model_fallback` (after a backoff honoring Retry-After), and
 *   stays there for the rest of this model's life (one turn). Crossing a provider boundary
 *   publishes `provider_recovery.changed` on the session's event stream.
 * - At most `max_retries` switches per call; when the chain is exhausted a `rate_limited` SvcError
 *   (with the Retry-After) says what was tried. With no fallback configured the 429 passes through
 *   unchanged, so the AI SDK's own retry (which honors Retry-After) handles it.
 * - 401/403 become an `unauthorized` SvcError naming the provider, the credential source and
 *   the fix; a 404 for the model becomes `not_found`.
 * @module
 */
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';

export interface ChainLink {
  selector: string;
  provider: string;
  model: LanguageModelV3;
}

export interface RecoveryOptions {
  primary: ChainLink;
  /** Later selectors to try, in order (the primary removed). */
  fallbacks: string[];
  build(selector: string): Promise<ChainLink>;
  maxRetries: number;
  maxBackoffMs: number;
  sessionId?: string;
  runId?: string;
  bus: EventBus;
  log: Logger;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** The fix for a rejected credential of a provider (which env var, which svc auth command). */
  authHint(provider: string): string;
}

const TPM =
  /rate.?limit|tokens? per min|\bTPM\b|\bRPM\b|too many requests|quota exceeded|resource.?exhausted/i;

export function rateLimitOf(error: unknown): { retryAfterMs?: number; reason: string } | undefined {
  if (APICallError.isInstance(error)) {
    const text = `${error.message} ${error.responseBody ?? ''}`;
    if (error.statusCode === 429)
      return { retryAfterMs: retryAfter(error.responseHeaders), reason: 'rate_limited (HTTP 429)' };
    if ((error.statusCode === 413 || error.statusCode === 400 || error.statusCode === 503) && TPM.test(text))
      return {
        retryAfterMs: retryAfter(error.responseHeaders),
        reason: `token_per_minute (HTTP ${error.statusCode})`,
      };
    return undefined;
  }
  if (SvcError.is(error)) return undefined;
  const message = error instanceof Error ? error.message : String(error);
  return TPM.test(message) ? { reason: 'rate_limited' } : undefined;
}

export function retryAfter(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = get('retry-after');
  if (value === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.max(0, Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export class RecoveringLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider: string;
  readonly modelId: string;
  private chain: (ChainLink | undefined)[];
  private selectors: string[];
  private index = 0;

  constructor(private readonly options: RecoveryOptions) {
    this.provider = options.primary.model.provider;
    this.modelId = options.primary.model.modelId;
    this.selectors = [options.primary.selector, ...options.fallbacks];
    // Filled by a loop, not a spread `map`: TurboFan's inlined `map` answers a holey array and
    // the spread deopted the optimized constructor once.
    this.chain = [options.primary];
    for (let i = 0; i < options.fallbacks.length; i++) this.chain.push(undefined);
  }

  get supportedUrls() {
    return (this.chain[this.index] ?? this.options.primary).model.supportedUrls;
  }

  /** The selector currently serving calls (after any recovery). */
  get current(): string {
    return this.selectors[this.index];
  }

  doGenerate(params: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    return this.attempt((model) => model.doGenerate(params), params.abortSignal);
  }

  doStream(params: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    return this.attempt((model) => model.doStream(params), params.abortSignal);
  }

  private async attempt<T>(
    call: (model: LanguageModelV3) => PromiseLike<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const { options } = this;
    let switches = 0;
    for (;;) {
      const link = this.chain[this.index]!;
      try {
        return await call(link.model);
      } catch (error) {
        const limit = rateLimitOf(error);
        if (!limit) throw this.mapError(error, link);
        // No fallback configured: the AI SDK's own retry (which honors Retry-After) owns it.
        if (this.selectors.length === 1 || signal?.aborted) throw error;
        const next = switches < options.maxRetries ? await this.nextLink(link) : undefined;
        if (!next) {
          const exhausted = this.exhausted(link, limit, switches);
          this.index = 0; // the next call starts over from the primary selector
          throw exhausted;
        }
        switches++;
        const backoff = Math.min(limit.retryAfterMs ?? 250 * 2 ** (switches - 1), options.maxBackoffMs);
        options.log.warn('provider rate limited; falling back', {
          from: link.selector,
          to: next.selector,
          reason: limit.reason,
          backoff_ms: backoff,
          attempt: switches,
        });
        if (backoff > 0) await options.sleep(backoff, signal);
        if (next.provider !== link.provider && options.sessionId) {
          options.bus.publish(options.sessionId, 'provider_recovery.changed', {
            session_id: options.sessionId,
            ...(options.runId ? { run_id: options.runId } : {}),
            from: link.selector,
            to: next.selector,
            reason: limit.reason,
            attempt: switches,
          });
        }
      }
    }
  }

  /** Moves to the next buildable fallback; undefined when there is none. */
  private async nextLink(from: ChainLink): Promise<ChainLink | undefined> {
    for (let i = this.index + 1; i < this.selectors.length; i++) {
      if (!this.chain[i]) {
        try {
          this.chain[i] = await this.options.build(this.selectors[i]);
        } catch (error) {
          this.options.log.warn('fallback selector unusable; skipped', {
            from: from.selector,
            selector: this.selectors[i],
            error: SvcError.is(error) ? error.message : String(error),
          });
          continue;
        }
      }
      this.index = i;
      return this.chain[i];
    }
    return undefined;
  }

  private exhausted(
    link: ChainLink,
    limit: { retryAfterMs?: number; reason: string },
    retries: number,
  ): SvcError {
    const tried = this.selectors.slice(0, this.index + 1).join(', ');
    const hint =
      this.selectors.length > 1
        ? 'every fallback selector is rate limited too'
        : 'add fallback selectors to options.tpm_recovery.provider_model_fallback';
    return new SvcError(
      'rate_limited',
      `${link.provider}: rate limited on ${link.selector} (${limit.reason}) after ${retries} retr${retries === 1 ? 'y' : 'ies'} (tried ${tried}); ${hint}`,
      { retryAfterMs: limit.retryAfterMs, details: { provider: link.provider, selector: link.selector } },
    );
  }

  private mapError(error: unknown, link: ChainLink): unknown {
    if (!APICallError.isInstance(error)) return error;
    if (error.statusCode === 401 || error.statusCode === 403) {
      return new SvcError(
        'unauthorized',
        `${link.provider}: the provider rejected the credential (HTTP ${error.statusCode}: ${firstLine(error.message)}); ${this.options.authHint(link.provider)}`,
        {
          cause: error,
          details: { provider: link.provider, selector: link.selector, status: error.statusCode },
        },
      );
    }
    if (error.statusCode === 404 && /model/i.test(`${error.message} ${error.responseBody ?? ''}`)) {
      return new SvcError(
        'not_found',
        `${link.provider}: model "${link.selector.slice(link.provider.length + 1)}" was not found by the provider (HTTP 404); pick another with svc models --provider ${link.provider}`,
        { cause: error, details: { provider: link.provider, selector: link.selector } },
      );
    }
    return error;
  }
}

function firstLine(text: string): string {
  const line = text.split('\n')[0].trim();
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}
