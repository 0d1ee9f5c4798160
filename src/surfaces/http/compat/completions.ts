/**
 * `POST /v1/completions`: the optional fill-in-the-middle edit-prediction proxy (COMPAT-06,
 * CFG-27), served only while `options.openai_compat.edit_predictions.enabled` is true (404
 * otherwise). It is not a pass-through: the request's `model` is ignored and only the FIM fields
 * are forwarded, to the one model svc is configured with
 * (`options.openai_compat.edit_predictions.model`, an openai-compatible provider that serves
 * `/completions` with `suffix`, e.g. a local llama.cpp, vLLM or ollama server).
 *
 * Request: `prompt` (string, the code before the cursor; required), `suffix` (string, after the
 * cursor), `max_tokens` (capped by `edit_predictions.max_tokens`), `temperature`, `stop`. Other
 * fields (including `stream`) are ignored. Response: a `text_completion` envelope with one choice.
 * @module
 */
import type { Context } from 'hono';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import { readJsonObject } from '../body';

export const COMPLETIONS_PATH = '/v1/completions';

export function editPredictionsEnabled(app: App): boolean {
  return app.config.options.openai_compat?.edit_predictions.enabled === true;
}

export async function completions(c: Context, app: App): Promise<Response> {
  const settings = app.config.options.openai_compat?.edit_predictions;
  if (!settings?.enabled) throw new SvcError('not_found', `no route POST ${COMPLETIONS_PATH}`);
  const body = await readJsonObject(c);
  if (typeof body.prompt !== 'string') {
    throw new SvcError('invalid_input', 'prompt: required, the text before the cursor (a string)');
  }
  if (!settings.model) {
    throw new SvcError(
      'unavailable',
      'edit predictions have no model: set options.openai_compat.edit_predictions.model = "<provider>/<model>"',
      { status: 503 },
    );
  }
  let parsed: ReturnType<App['providers']['parse']>;
  try {
    parsed = app.providers.parse(settings.model);
  } catch (error) {
    throw new SvcError(
      'unavailable',
      `options.openai_compat.edit_predictions.model: ${(error as Error).message}`,
      { status: 503 },
    );
  }
  const { entry, model } = parsed;
  if (!entry.base_url) {
    throw new SvcError(
      'unavailable',
      `edit predictions: provider ${entry.id} has no base_url; use an openai-compatible provider that serves /completions`,
      { status: 503 },
    );
  }
  const readiness = app.providers.readiness(entry);
  if (!readiness.ready) {
    throw new SvcError('unavailable', `edit predictions: ${readiness.reason ?? `${entry.id} is not ready`}`, {
      status: 503,
    });
  }
  const key = readiness.credential.value;
  if (key) app.redactor.add(key);
  const requested =
    typeof body.max_tokens === 'number' && body.max_tokens > 0
      ? Math.floor(body.max_tokens)
      : settings.max_tokens;
  const upstream = {
    model,
    prompt: body.prompt,
    ...(typeof body.suffix === 'string' ? { suffix: body.suffix } : {}),
    max_tokens: Math.min(requested, settings.max_tokens),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.stop === 'string' || Array.isArray(body.stop) ? { stop: body.stop } : {}),
    stream: false,
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(app.config.providers[entry.id]?.headers ?? {}),
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
  const url = `${entry.base_url.replace(/\/+$/, '')}/completions`;
  const signal = AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(settings.timeout_seconds * 1000)]);
  let response: Response;
  try {
    response = await app.fetch(url, { method: 'POST', headers, body: JSON.stringify(upstream), signal });
  } catch (error) {
    throw new SvcError(
      'unavailable',
      `edit predictions: ${entry.id} did not answer: ${(error as Error).message}`,
      {
        status: 502,
      },
    );
  }
  const text = await response.text();
  let json: Record<string, any> | undefined;
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    json = undefined;
  }
  if (!response.ok || !json) {
    const message =
      typeof json?.error?.message === 'string'
        ? json.error.message
        : text.slice(0, 200) || `HTTP ${response.status}`;
    throw new SvcError(
      'unavailable',
      `edit predictions: ${entry.id} answered ${response.status}: ${message}`,
      {
        status: 502,
      },
    );
  }
  const choice = Array.isArray(json.choices) ? json.choices[0] : undefined;
  const usage = json.usage ?? {};
  return c.json(
    app.redactor.value({
      id: app.ids.next('cmpl').replace('_', '-'),
      object: 'text_completion',
      created: Math.floor(app.clock.now() / 1000),
      model: `${entry.id}/${model}`,
      choices: [
        {
          index: 0,
          text: typeof choice?.text === 'string' ? choice.text : '',
          logprobs: null,
          finish_reason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : 'stop',
        },
      ],
      usage: {
        prompt_tokens: Number(usage.prompt_tokens ?? 0),
        completion_tokens: Number(usage.completion_tokens ?? 0),
        total_tokens: Number(
          usage.total_tokens ?? Number(usage.prompt_tokens ?? 0) + Number(usage.completion_tokens ?? 0),
        ),
      },
    }),
  );
}
