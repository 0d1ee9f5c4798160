/**
 * What an OpenAI-compatible server says about its models: which ones it serves (`GET /v1/models`,
 * Ollama's `GET /api/tags`) and how long a context window one of them has (Ollama
 * `POST /api/show`, LM Studio `GET /api/v0/models`, llama.cpp `GET /props`, vLLM's
 * `max_model_len` in `GET /v1/models`). Every probe is bounded by a short timeout and never
 * throws: a server that does not answer is simply one that told nothing.
 * @module
 */

export interface ServerProbe {
  fetch: typeof fetch;
  /** The provider's base URL (`http://127.0.0.1:11434/v1`). */
  base_url: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Sent with every probe (an API key of a remote server). */
  headers?: Record<string, string>;
}

export interface ServerModels {
  models: string[];
  /** Why the list is empty: the server did not answer, or answered with an error. */
  error?: string;
}

export interface LearnedWindow {
  context_window: number;
  /** Which endpoint told it: `ollama /api/show num_ctx`, `vllm max_model_len`, … */
  source: string;
}

/** `http://host:port/v1` → `http://host:port` (the native APIs live at the root). */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

async function getJson(
  probe: ServerProbe,
  signal: AbortSignal,
  url: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ ok: true; body: unknown } | { ok: false; error: string }> {
  try {
    const response = await probe.fetch(url, {
      method: init.method ?? 'GET',
      signal,
      headers: {
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...probe.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, error: `HTTP ${response.status}` };
    }
    return { ok: true, body: await response.json() };
  } catch (error) {
    const e = error as Error;
    const reason = e.name === 'TimeoutError' || e.name === 'AbortError' ? 'no answer in time' : e.message;
    return { ok: false, error: reason };
  }
}

function signalOf(probe: ServerProbe): AbortSignal {
  const timeout = AbortSignal.timeout(probe.timeoutMs);
  return probe.signal ? AbortSignal.any([probe.signal, timeout]) : timeout;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const positiveInt = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;

/** The models a server serves: `/v1/models` (OpenAI shape) and Ollama's `/api/tags`, merged. */
export async function listServerModels(probe: ServerProbe): Promise<ServerModels> {
  const signal = signalOf(probe);
  const base = probe.base_url.replace(/\/+$/, '');
  const root = serverRoot(base);
  const [openai, ollama] = await Promise.all([
    getJson(probe, signal, `${base}/models`),
    root === base ? Promise.resolve(undefined) : getJson(probe, signal, `${root}/api/tags`),
  ]);
  const ids: unknown[] = [];
  for (const answer of [openai, ollama]) {
    if (!answer?.ok || !isRecord(answer.body)) continue;
    const { data, models } = answer.body;
    if (Array.isArray(data)) ids.push(...data.map((m) => (isRecord(m) ? m.id : undefined)));
    if (Array.isArray(models))
      ids.push(...models.map((m) => (isRecord(m) ? (m.name ?? m.model) : undefined)));
  }
  const models = [...new Set(ids.filter((id): id is string => typeof id === 'string' && id.length > 0))];
  if (models.length > 0) return { models };
  return { models, error: openai.ok ? undefined : openai.error };
}

/**
 * The context window a server reports for one model, or undefined when none of the known
 * endpoints tells (all are asked at once, within one timeout). Where a server tells both the
 * model's trained length and the length it actually runs with, the latter wins: that is what
 * the prompt is truncated to.
 */
export async function learnContextWindow(
  probe: ServerProbe,
  model: string,
): Promise<LearnedWindow | undefined> {
  const signal = signalOf(probe);
  const base = probe.base_url.replace(/\/+$/, '');
  const root = serverRoot(base);
  const [ollama, lmstudio, llamacpp, openai] = await Promise.all([
    getJson(probe, signal, `${root}/api/show`, { method: 'POST', body: { model, name: model } }),
    getJson(probe, signal, `${root}/api/v0/models`),
    getJson(probe, signal, `${root}/props`),
    getJson(probe, signal, `${base}/models`),
  ]);
  return (
    fromOllama(ollama) ??
    fromLmStudio(lmstudio, model) ??
    fromLlamaCpp(llamacpp) ??
    fromModelList(openai, model)
  );
}

type Answer = Awaited<ReturnType<typeof getJson>>;

function fromOllama(answer: Answer): LearnedWindow | undefined {
  if (!answer.ok || !isRecord(answer.body)) return undefined;
  const { parameters, model_info } = answer.body;
  if (typeof parameters === 'string') {
    const numCtx = /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(parameters);
    const value = numCtx ? positiveInt(Number(numCtx[1])) : undefined;
    if (value) return { context_window: value, source: 'ollama /api/show num_ctx' };
  }
  if (isRecord(model_info)) {
    for (const [key, value] of Object.entries(model_info)) {
      const n = key.endsWith('.context_length') ? positiveInt(value) : undefined;
      if (n) return { context_window: n, source: `ollama /api/show ${key}` };
    }
  }
  return undefined;
}

function fromLmStudio(answer: Answer, model: string): LearnedWindow | undefined {
  if (!answer.ok || !isRecord(answer.body) || !Array.isArray(answer.body.data)) return undefined;
  const entry = answer.body.data.find((m) => isRecord(m) && m.id === model);
  if (!isRecord(entry)) return undefined;
  const loaded = positiveInt(entry.loaded_context_length);
  if (loaded) return { context_window: loaded, source: 'lmstudio loaded_context_length' };
  const max = positiveInt(entry.max_context_length);
  return max ? { context_window: max, source: 'lmstudio max_context_length' } : undefined;
}

function fromLlamaCpp(answer: Answer): LearnedWindow | undefined {
  if (!answer.ok || !isRecord(answer.body)) return undefined;
  const settings = answer.body.default_generation_settings;
  const n = positiveInt(isRecord(settings) ? settings.n_ctx : undefined) ?? positiveInt(answer.body.n_ctx);
  return n ? { context_window: n, source: 'llama.cpp /props n_ctx' } : undefined;
}

function fromModelList(answer: Answer, model: string): LearnedWindow | undefined {
  if (!answer.ok || !isRecord(answer.body) || !Array.isArray(answer.body.data)) return undefined;
  const data = answer.body.data.filter(isRecord);
  const entry = data.find((m) => m.id === model);
  if (!entry) return undefined;
  for (const field of ['max_model_len', 'context_length', 'context_window'] as const) {
    const n = positiveInt(entry[field]);
    if (n) return { context_window: n, source: `/v1/models ${field}` };
  }
  return undefined;
}
