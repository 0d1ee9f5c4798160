/**
 * A finished run in chat-completions terms: its `finish_reason`, its `usage` object, and the HTTP
 * status and message of a run that did not complete.
 * @module
 */
import type { ResultWithoutText } from '../../../agent/types';

export function finishReasonOf(result: Pick<ResultWithoutText, 'reason'>): 'stop' | 'length' {
  return result.reason?.startsWith('length') ? 'length' : 'stop';
}

export function usageOf(result: Pick<ResultWithoutText, 'usage'>) {
  return {
    prompt_tokens: result.usage.input_tokens,
    completion_tokens: result.usage.output_tokens,
    total_tokens: result.usage.input_tokens + result.usage.output_tokens,
    ...(result.usage.cached_input_tokens
      ? { prompt_tokens_details: { cached_tokens: result.usage.cached_input_tokens } }
      : {}),
    ...(result.usage.reasoning_tokens
      ? { completion_tokens_details: { reasoning_tokens: result.usage.reasoning_tokens } }
      : {}),
  };
}

export function runFailure(result: ResultWithoutText): { status: number; message: string } {
  const what = result.failure
    ? `${result.failure.summary}; next: ${result.failure.next}`
    : (result.error ?? result.reason ?? result.status);
  const message = `the run ${result.status}: ${what}`;
  if (result.reason === 'provider_error') return { status: 502, message };
  if (
    result.reason === 'model_unavailable' ||
    result.status === 'interrupted' ||
    result.status === 'cancelled'
  ) {
    return { status: 503, message };
  }
  return { status: 500, message };
}
