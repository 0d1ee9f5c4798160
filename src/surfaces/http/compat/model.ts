/**
 * `model` of a compat request → a model selector, through the resolver (COMPAT-08/09).
 *
 * "Resolver fallback" (docs/compat.md): an empty or missing `model`, or one of the aliases `svc`,
 * `default`, `svc/default`, means svc's own default (the session's model, else `[models].large`,
 * else the first ready provider); `options.openai_compat.fallback_model`, when set, serves any
 * model the resolver does not know. A model the resolver does not know with no fallback is the
 * request-level 400. A known model whose provider cannot serve (no key, no region…) is a 503:
 * the request is fine, the server is not set up for it.
 * @module
 */
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import type { ResolvedModel } from '../../../providers/types';

export const DEFAULT_MODEL_ALIASES = ['', 'svc', 'default', 'svc/default'] as const;

export interface CompatModel {
  resolved: ResolvedModel;
  /** requested: the request's model; default: an alias or no model; fallback_model: the configured fallback. */
  source: 'requested' | 'default' | 'fallback_model';
}

export async function resolveCompatModel(
  app: App,
  requested: string,
  options: { sessionModel?: string | null; signal?: AbortSignal },
): Promise<CompatModel> {
  const isDefault = (DEFAULT_MODEL_ALIASES as readonly string[]).includes(requested.toLowerCase());
  try {
    if (isDefault) {
      const resolved = await app.models.resolve({
        sessionModel: options.sessionModel,
        signal: options.signal,
      });
      return { resolved, source: 'default' };
    }
    try {
      return {
        resolved: await app.models.resolve({ selector: requested, signal: options.signal }),
        source: 'requested',
      };
    } catch (error) {
      const fallback = app.config.options.openai_compat?.fallback_model;
      if (!fallback || !isUnknownModel(error)) throw error;
      const resolved = await app.models.resolve({ selector: fallback, signal: options.signal });
      return { resolved, source: 'fallback_model' };
    }
  } catch (error) {
    if (isUnknownModel(error)) {
      throw new SvcError('invalid_input', `model: ${messageOf(error).replace(/^model: /, '')}`, {
        status: 400,
      });
    }
    const e = SvcError.is(error) ? error : undefined;
    throw new SvcError('unavailable', `model: ${messageOf(error).replace(/^model: /, '')}`, {
      status: 503,
      cause: e ?? error,
    });
  }
}

function isUnknownModel(error: unknown): boolean {
  return SvcError.is(error) && (error.code === 'not_found' || error.code === 'invalid_input');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
