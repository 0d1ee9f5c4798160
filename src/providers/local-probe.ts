/**
 * With no provider configured at all, look for a local model server on loopback (ollama 11434,
 * LM Studio 1234, llama.cpp 8080, vLLM 8000) with short timeouts through the OpenAI-compatible
 * `GET /v1/models` (and Ollama's `/api/tags`). The first that answers with a model wins, in that order.
 * @module
 */
import { listServerModels } from './server-models';

export interface LocalServer {
  provider: string;
  base_url: string;
  models: string[];
}

export async function probeLocalServers(options: {
  fetch: typeof fetch;
  probes: { provider: string; base_url: string }[];
  timeoutMs: number;
  signal?: AbortSignal;
}): Promise<LocalServer | undefined> {
  const results = await Promise.all(
    options.probes.map(async (probe) => {
      const { models } = await listServerModels({
        fetch: options.fetch,
        base_url: probe.base_url,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
      });
      return models.length ? { ...probe, models } : undefined;
    }),
  );
  return results.find((r) => r !== undefined);
}
