/**
 * The compat routes in `/v1/openapi.json`.
 * @module
 */
import type { OpenApiRoutes } from '../openapi';
import { SESSION_HEADER } from './chat-completions';
import { COMPLETIONS_PATH, editPredictionsEnabled } from './completions';
import { IGNORED_FIELDS } from './request';

const flat = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/FlatError' } } },
});

const errors = {
  '400': flat('Empty or missing `messages`, an unknown `model` with no fallback, or a malformed JSON body.'),
  '401': flat('Bearer token missing or wrong, or no token configured (`authentication required`).'),
  '404': flat('Unknown session in `X-Svc-Session-Id`.'),
  '503': flat('`App not ready`, or the resolved model cannot be served (provider not set up).'),
};

/** Every compat route, one group at a time. */
export function describeCompatRoutes(openapi: OpenApiRoutes): void {
  describeChatCompletions(openapi);
  describeLedgerRoutes(openapi);
  describePosture(openapi);
  describeCompletions(openapi);
}

const message = {
  type: 'object',
  properties: {
    role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
    content: {
      oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }, { type: 'null' }],
    },
    tool_calls: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          type: { type: 'string', enum: ['function'] },
          function: {
            type: 'object',
            properties: { name: { type: 'string' }, arguments: { type: 'string' } },
            required: ['name'],
          },
        },
      },
    },
    tool_call_id: { type: 'string' },
  },
  required: ['role'],
};

function describeChatCompletions(openapi: OpenApiRoutes): void {
  openapi.add('POST', '/v1/chat/completions', {
    operationId: 'chat_completions',
    summary: 'Chat completions compat surface: each request is an agent run in a session.',
    description:
      'Honored: model (resolver; empty or "svc" = the default), messages (required, non-empty), stream, ' +
      'stream_options.include_usage; message role, content, tool_calls. Accepted and ignored: ' +
      `${IGNORED_FIELDS.join(', ')}. A new session per request unless the ${SESSION_HEADER} header names ` +
      'one. Streaming answers are chat.completion.chunk SSE ending with data: [DONE]; a run that fails ' +
      'mid-stream sends data: {"error":{"message","type":"invalid_request_error"}} first.',
    tags: ['compat'],
    parameters: [
      {
        name: SESSION_HEADER,
        in: 'header',
        required: false,
        schema: { type: 'string' },
        description:
          'Run in this existing session (its own history; only the trailing user messages are sent).',
      },
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              model: { type: 'string' },
              messages: { type: 'array', items: message, minItems: 1 },
              stream: { type: 'boolean' },
              stream_options: { type: 'object', properties: { include_usage: { type: 'boolean' } } },
              ...Object.fromEntries(IGNORED_FIELDS.map((f) => [f, { description: 'Accepted and ignored.' }])),
            },
            required: ['messages'],
          },
        },
      },
    },
    responses: {
      '200': {
        description: 'A chat.completion envelope (one choice), or an SSE stream when `stream` is true.',
        content: {
          'application/json': { schema: { type: 'object' } },
          'text/event-stream': { schema: { type: 'string' } },
        },
      },
      ...errors,
      '500': flat('The run failed (loop detected, step limit, …).'),
      '502': flat('The provider failed during the run.'),
    },
  });
}

/** The compat ledger: the requests recorded as runs, and one request's events. */
function describeLedgerRoutes(openapi: OpenApiRoutes): void {
  openapi.add('GET', '/v1/openai-compat/runs', {
    operationId: 'openai_compat_runs',
    summary: 'Compat requests recorded as runs (newest first). `runs` is null when there are none.',
    tags: ['compat'],
    parameters: [
      {
        name: 'limit',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
        description: 'Most runs to return.',
      },
    ],
    responses: {
      '200': {
        description: 'Needs `[options.openai_compat]` to record anything.',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                runs: { oneOf: [{ type: 'array', items: { type: 'object' } }, { type: 'null' }] },
                total: { type: 'integer' },
                ledger: { type: 'object' },
              },
              required: ['runs', 'total'],
            },
          },
        },
      },
      '400': flat('invalid limit'),
      '401': errors['401'],
      '503': flat('`App not ready`.'),
    },
  });
  openapi.add('GET', '/v1/openai-compat/runs/{request_id}/events', {
    operationId: 'openai_compat_run_events',
    summary: 'Ledger events of one compat request. An unknown request_id answers 200 with total 0.',
    tags: ['compat'],
    parameters: [
      {
        name: 'request_id',
        in: 'path',
        required: true,
        schema: { type: 'string' },
        description: 'The completion id (chatcmpl-…).',
      },
    ],
    responses: {
      '200': {
        description: '`events` is null when empty.',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                request_id: { type: 'string' },
                run_id: { type: ['string', 'null'] },
                total: { type: 'integer' },
                events: { oneOf: [{ type: 'array', items: { type: 'object' } }, { type: 'null' }] },
              },
              required: ['total', 'events'],
            },
          },
        },
      },
      '401': errors['401'],
      '503': flat('`App not ready`.'),
    },
  });
}

function describePosture(openapi: OpenApiRoutes): void {
  openapi.add('GET', '/v1/openai-compat/posture', {
    operationId: 'openai_compat_posture',
    summary:
      'How the compat surface handles fields, tools, the ledger and edit predictions (docs/compat.md).',
    tags: ['compat'],
    responses: {
      '200': { description: 'The posture.', content: { 'application/json': { schema: { type: 'object' } } } },
      '401': errors['401'],
      '503': flat('`App not ready`.'),
    },
  });
}

/** Edit predictions: described only while they are on (the route answers 404 otherwise). */
function describeCompletions(openapi: OpenApiRoutes): void {
  openapi.add(
    'POST',
    COMPLETIONS_PATH,
    {
      operationId: 'completions',
      summary:
        'Fill-in-the-middle edit predictions (only when options.openai_compat.edit_predictions.enabled).',
      tags: ['compat'],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                prompt: { type: 'string', description: 'Text before the cursor.' },
                suffix: { type: 'string', description: 'Text after the cursor.' },
                max_tokens: { type: 'integer' },
                temperature: { type: 'number' },
                stop: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
              },
              required: ['prompt'],
            },
          },
        },
      },
      responses: {
        '200': {
          description: 'A text_completion envelope.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        '400': flat('`prompt` missing, or a malformed JSON body.'),
        '401': errors['401'],
        '404': flat('Edit predictions are off.'),
        '502': flat('The provider failed.'),
        '503': flat('No model configured, or its provider is not ready.'),
      },
    },
    editPredictionsEnabled,
  );
}
