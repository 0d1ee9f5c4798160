/**
 * The contract between the model layer and everything that runs turns (agent loop, compat
 * surface, summaries). The providers domain implements it; callers never build AI SDK providers
 * themselves.
 * @module
 */
import type { LanguageModel } from 'ai';

export interface ModelInfo {
  id: string;
  name?: string;
  context_window?: number;
  max_output?: number;
  cost_per_1m_in?: number;
  cost_per_1m_out?: number;
  tool_call?: boolean;
  reasoning?: boolean;
  attachments?: boolean;
}

export interface ResolvedModel {
  /** `<provider>/<model>` */
  selector: string;
  provider: string;
  model_id: string;
  /** An AI SDK language model, ready for streamText/generateText. */
  language_model: LanguageModel;
  info: ModelInfo;
  /**
   * Why this model: `explicit`, `session`, `agent`, `default` ([models] large/small),
   * `first_ready` (no default: the first ready provider's recommended model) or `local_server`
   * (nothing configured: a local model server answered on loopback).
   */
  source: string;
  /**
   * Where `info.context_window` comes from: `config`, `catalog`, the server endpoint that told it
   * (`ollama /api/show num_ctx`, `vllm`…, cached in `<data dir>/cache/context-windows.json`), or
   * `unknown`.
   */
  window_source?: string;
}

export interface ResolveRequest {
  /** An explicit selector (`provider/model`, or a bare model id offered by exactly one provider). */
  selector?: string;
  /** large: main turns; small: titles, summaries. Default large. */
  purpose?: 'large' | 'small';
  /** Session override, if any (the session's model). */
  sessionModel?: string | null;
  /** Agent config model, if any. */
  agentModel?: string;
  /**
   * The session the turn belongs to: rate-limit recovery that crosses a provider boundary
   * publishes `provider_recovery.changed` on it.
   */
  sessionId?: string;
  /** The run the turn belongs to (carried in `provider_recovery.changed`). */
  runId?: string;
  /** Cancels credential fetches and the local-server probe. */
  signal?: AbortSignal;
  /** Why the call is made, for the cost ledger (default `agent_step`). */
  call_purpose?: CallPurpose;
}

/** Why svc calls a model; every call is recorded in the cost ledger under one of these. */
export const CALL_PURPOSES = ['agent_step', 'subagent', 'compat', 'compaction', 'summary', 'other'] as const;
export type CallPurpose = (typeof CALL_PURPOSES)[number];

/** One model call as it starts. */
export interface ModelCallStart {
  purpose: CallPurpose;
  session_id: string | null;
  run_id: string | null;
  provider: string;
  model: string;
  /** The prompt the model gets (read only when telemetry includes content). */
  prompt: unknown;
}

/** One model call as it ended. Tokens are the provider's report (0 when it gave none). */
export interface ModelCallEnd {
  /** The provider and model that served it (differs from the start after a rate-limit fallback). */
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cached_input_tokens: number;
  /** USD, from the catalog's per-million prices of the model that served it. */
  cost: number;
  ttft_ms: number | null;
  duration_ms: number;
  status: 'ok' | 'error';
  /** The error's class name and message when status is error. */
  error?: string;
  /** The text the model answered (read only when telemetry includes content). */
  output?: string;
}

/** Where every model call is reported (the telemetry domain: ledger, metrics, spans). */
export interface ModelCallSink {
  start(call: ModelCallStart): { end(result: ModelCallEnd): Promise<void> };
}

export interface ModelResolver {
  /**
   * Throws an SvcError naming the provider and what to do when it cannot. The returned
   * `language_model` recovers from rate limits by itself (tpm_recovery) and maps 401s to
   * `unauthorized` SvcErrors; callers just stream from it.
   */
  resolve(request?: ResolveRequest): Promise<ResolvedModel>;
  /**
   * A model this resolver resolved, bound to another request's call purpose, session and run
   * (its metering and its rate-limit recovery events) without resolving it again: no second
   * selection of the provider, credential check or context-window lookup. Undefined when the
   * request would not select the same model (another selector, or none) or the model did not
   * come from this resolver: the caller resolves it then.
   */
  bind(resolved: ResolvedModel, request: ResolveRequest): ResolvedModel | undefined;
}
