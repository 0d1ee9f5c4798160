/**
 * `[options.length_recovery]`, `[options.alerts]` and `[options.openai_compat]`: recovering a cut-off answer, alerting on failures, and the chat-completions compat surface.
 * Parts of ./options.ts's `optionsSchema`.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { selector } from './shared';

export const lengthRecoveryOptions = lazy(() =>
  z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'When a step ends because the model hit its output token limit, continue the turn with a continuation instruction.',
        ),
      max_attempts: z.number().int().min(0).max(10).default(2).describe('Most continuations per run.'),
    })
    .prefault({}),
);

export const alertsOptions = lazy(() =>
  z
    .strictObject({
      window_minutes: z
        .number()
        .int()
        .positive()
        .default(60)
        .describe('get_alerts_status looks at this many recent minutes.'),
      repeated_failures: z
        .number()
        .int()
        .positive()
        .default(3)
        .describe('Failed runs in a row (per session) that raise a repeated_failures alert.'),
      provider_errors: z
        .number()
        .int()
        .positive()
        .default(3)
        .describe('Provider errors in the window that raise an incidents alert.'),
      tool_crashes: z
        .number()
        .int()
        .positive()
        .default(1)
        .describe('Tool crashes (a tool threw a non-SvcError) in the window that raise an incidents alert.'),
      hook_failures: z
        .number()
        .int()
        .positive()
        .default(1)
        .describe('Failed or timed-out pack hooks in the window that raise a hook_failures alert.'),
    })
    .prefault({}),
);

export const openaiCompatOptions = lazy(() =>
  z
    .strictObject({
      tool_policy: z
        .enum(['none', 'read_only', 'allowed_tools', 'all'])
        .default('read_only')
        .describe(
          'Which svc tools a compat-originated run may execute: none, read_only (tools that do not mutate), allowed_tools ([permissions].allowed_tools only) or all. A denied tool is not run.',
        ),
      ledger: z
        .boolean()
        .default(true)
        .describe('Record each compat request as a run (GET /v1/openai-compat/runs).'),
      fallback_model: selector()
        .optional()
        .describe('Serves a compat request whose model the resolver does not know (instead of 400).'),
      max_concurrent_runs: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          'Chat-completions requests whose agent runs at once; the others wait in the run queue. Default: 2x the CPU cores.',
        ),
      max_queued_requests: z
        .number()
        .int()
        .nonnegative()
        .default(256)
        .describe(
          'Requests that may wait in the compat run queue; past it a request gets 429 with Retry-After.',
        ),
      max_messages: z
        .number()
        .int()
        .positive()
        .max(20_000)
        .default(2000)
        .describe(
          'Most messages one chat-completions request may send (a new session imports each of them, ≈ 0.1 ms each with the server busy); past it a 413.',
        ),
      edit_predictions: z
        .strictObject({
          enabled: z
            .boolean()
            .default(false)
            .describe('Serve POST /v1/completions: the fill-in-the-middle edit-prediction proxy.'),
          model: selector()
            .optional()
            .describe('The model the proxy forwards to (an openai-compatible provider with /completions).'),
          max_tokens: z
            .number()
            .int()
            .positive()
            .default(256)
            .describe('Upper bound of max_tokens forwarded to the provider.'),
          timeout_seconds: z.number().positive().default(30).describe('Provider request timeout.'),
        })
        .prefault({}),
    })
    .optional()
    .describe('The chat-completions compat surface; configuring it turns on its run ledger.'),
);
