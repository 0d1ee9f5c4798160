/**
 * `GET /v1/openai-compat/posture` (COMPAT-07; payload designed here, documented in
 * docs/compat.md): how the compat surface handles each request field, the tool policy with the
 * tools it lets compat runs execute, the ledger, edit predictions, session mapping, model
 * fallback, the documented divergences from the canonical wire format and the changes planned
 * for them (VER-04).
 * @module
 */
import type { App } from '../../../app';
import { SESSION_HEADER } from './chat-completions';
import { COMPLETIONS_PATH, editPredictionsEnabled } from './completions';
import { CONTINUE_PROMPT } from './conversation';
import { ledgerEnabled } from './ledger';
import { DEFAULT_MODEL_ALIASES } from './model';
import { HONORED_FIELDS, HONORED_MESSAGE_FIELDS, IGNORED_FIELDS } from './request';
import { policyDenies, toolPolicyOf } from './runtime';

export const POSTURE_SCHEMA_VERSION = 'svc.openai_compat_posture.v1';

/** Sibling APIs that are not registered (COMPAT-23): every path under them answers 404. */
export const UNREGISTERED_SIBLING_APIS = [
  '/v1/assistants',
  '/v1/threads',
  '/v1/files',
  '/v1/uploads',
  '/v1/vector_stores',
  '/v1/realtime',
  '/v1/audio',
  '/v1/images',
  '/v1/embeddings',
  '/v1/fine_tuning',
  '/v1/responses',
  '/v1/batches',
  '/v1/moderations',
];

export function compatPosture(app: App) {
  const { policy, source } = toolPolicyOf(app);
  const registered = app.tools.registered();
  const allowed = registered
    .filter((t) => !policyDenies(app, t))
    .map((t) => t.name)
    .sort();
  const ledger = ledgerEnabled(app);
  const predictions = app.config.options.openai_compat?.edit_predictions;
  return {
    schema_version: POSTURE_SCHEMA_VERSION,
    configured: app.config.options.openai_compat !== undefined,
    routes: {
      chat_completions: 'POST /v1/chat/completions',
      runs: 'GET /v1/openai-compat/runs',
      run_events: 'GET /v1/openai-compat/runs/{request_id}/events',
      posture: 'GET /v1/openai-compat/posture',
      completions: editPredictionsEnabled(app) ? `POST ${COMPLETIONS_PATH}` : null,
    },
    fields: {
      honored: [...HONORED_FIELDS],
      honored_message_fields: [...HONORED_MESSAGE_FIELDS],
      ignored: [...IGNORED_FIELDS],
      rejected: [] as string[],
      notes: {
        n: 'always one choice',
        max_tokens: 'ignored; provider and agent defaults and the context-budget controls apply',
        tools: 'ignored; svc uses its own tool registry under tool_policy',
        stream_options: 'include_usage adds a usage chunk with empty choices before [DONE]',
      },
    },
    request_errors_400: [
      'empty or missing messages',
      'unknown model with no fallback',
      'malformed JSON body',
    ],
    model: {
      default_aliases: [...DEFAULT_MODEL_ALIASES].map((a) => (a === '' ? '(empty or missing)' : a)),
      default_selector: app.config.models.large ?? null,
      fallback_model: app.config.options.openai_compat?.fallback_model ?? null,
    },
    sessions: {
      default: 'a new session per request',
      bind_header: SESSION_HEADER,
      response_headers: ['x-request-id', SESSION_HEADER, 'x-svc-run-id'],
      continue_prompt: CONTINUE_PROMPT,
    },
    tool_policy: {
      value: policy,
      source,
      executable_tools: allowed,
      executable_count: allowed.length,
      registered_count: registered.length,
    },
    ledger: { enabled: ledger.enabled, reason: ledger.reason },
    edit_predictions: {
      enabled: predictions?.enabled === true,
      model: predictions?.model ?? null,
      route: editPredictionsEnabled(app) ? `POST ${COMPLETIONS_PATH}` : null,
    },
    unregistered_sibling_apis: UNREGISTERED_SIBLING_APIS,
    one_way: true,
    divergences: [
      {
        id: 'flat_error_body',
        current: 'non-streaming errors on compat routes: {"error": "<message>", "code": <status>}',
        planned: 'the canonical {"error": {"message", "type", "param", "code"}} shape',
      },
      {
        id: 'null_empty_lists',
        current: 'empty lists on the runs routes are JSON null',
        planned: '[]',
      },
      {
        id: 'unknown_request_id_200',
        current: 'an unknown request_id on the run-events route answers 200 with total 0',
        planned: null,
      },
    ],
  };
}
