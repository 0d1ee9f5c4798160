/**
 * With no provider configured at all, look for a local model server on loopback (ollama 11434,
 * LM Studio 1234, llama.cpp 8080, vLLM 8000) with short timeouts through the OpenAI-compatible
 * `GET /v1/models`. The first that answers with a model wins, in that order.
 * @module
 */

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
      const timeout = AbortSignal.timeout(options.timeoutMs);
      try {
        const response = await options.fetch(`${probe.base_url.replace(/\/+$/, '')}/models`, {
          signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
          headers: { accept: 'application/json' },
        });
        if (!response.ok) return undefined;
        const body = (await response.json()) as { data?: { id?: unknown }[]; models?: { name?: unknown }[] };
        const models = [
          ...(body.data ?? []).map((m) => m.id),
          ...(body.models ?? []).map((m) => m.name),
        ].filter((id): id is string => typeof id === 'string' && id.length > 0);
        return models.length ? { ...probe, models } : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return results.find((r) => r !== undefined);
}
