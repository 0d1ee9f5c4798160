/**
 * `[options.local_probe]` and `[options.tpm_recovery]`: finding a local model server, and what a rate-limited run falls back to.
 * Parts of ./options.ts's `optionsSchema`.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { selector } from './shared';

export const localProbeOptions = lazy(() =>
  z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('With no provider configured, look for a local model server.'),
      urls: z
        .array(z.string())
        .default([
          'ollama=http://127.0.0.1:11434/v1',
          'lmstudio=http://127.0.0.1:1234/v1',
          'llamacpp=http://127.0.0.1:8080/v1',
          'vllm=http://127.0.0.1:8000/v1',
        ])
        .describe('Probed in order with GET <url>/models: <provider>=<base_url>.'),
      timeout_ms: z.number().int().positive().default(400),
      learn_window: z
        .boolean()
        .default(true)
        .describe(
          'Ask an OpenAI-compatible server for the context window of a model that sets none (Ollama /api/show, LM Studio, llama.cpp /props, vLLM max_model_len); cached in <data dir>/cache/context-windows.json.',
        ),
      window_timeout_ms: z
        .number()
        .int()
        .positive()
        .default(1500)
        .describe(
          'Time limit of the context-window probe; on timeout the turn goes on with the catalog window.',
        ),
    })
    .prefault({}),
);

export const tpmRecoveryOptions = lazy(() =>
  z
    .strictObject({
      provider_model_fallback: z.array(selector()).default([]),
      max_retries: z.number().int().min(0).default(3),
      max_backoff_ms: z.number().int().min(0).default(30_000),
    })
    .prefault({}),
);
