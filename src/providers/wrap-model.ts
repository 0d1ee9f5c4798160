/**
 * A wrapper model: the wrapped model's identity (specification version, provider, model id,
 * supported URLs, read through) with calls of the wrapper's own. For wrappers that only change
 * what a call sends (./request-body.ts, ./prompt-messages.ts).
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';

export function wrapModel(
  model: LanguageModelV3,
  calls: Pick<LanguageModelV3, 'doStream' | 'doGenerate'>,
): LanguageModelV3 {
  return {
    specificationVersion: model.specificationVersion,
    get provider() {
      return model.provider;
    },
    get modelId() {
      return model.modelId;
    },
    get supportedUrls() {
      return model.supportedUrls;
    },
    doStream: calls.doStream,
    doGenerate: calls.doGenerate,
  };
}
