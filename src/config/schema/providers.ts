/**
 * `[providers.<id>]`: a model provider, its models and its cloud options.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const providerOptionsSchema = lazy(() =>
  z.strictObject({
    auth_source: z
      .enum(['auto', 'env', 'profile', 'bearer', 'container'])
      .optional()
      .describe('Cloud credential source; auto when unset.'),
    region: z.string().optional().describe('Cloud region. Still required when auth_source is container.'),
    profile: z.string().optional().describe('Named cloud profile.'),
    project: z.string().optional().describe('Cloud project id (vertex).'),
    location: z.string().optional().describe('Cloud location (vertex).'),
    api_version: z.string().optional().describe('API version (azure).'),
    resource_name: z.string().optional().describe('Azure resource name.'),
    use_directory_identity: z.boolean().optional().describe('Azure: use directory (Entra) identity, no key.'),
    reasoning_effort: z.string().optional(),
  }),
);

export const providerModelSchema = lazy(() =>
  z.strictObject({
    id: z.string().min(1),
    name: z.string().optional(),
    context_window: z.number().int().positive().optional(),
    max_output: z.number().int().positive().optional(),
    cost_per_1m_in: z.number().nonnegative().optional(),
    cost_per_1m_out: z.number().nonnegative().optional(),
    tool_call: z.boolean().optional(),
    reasoning: z.boolean().optional(),
    attachments: z.boolean().optional(),
  }),
);

export const providerSchema = lazy(() =>
  z.strictObject({
    type: z
      .string()
      .optional()
      .describe(
        'Wire type: openai, anthropic, google, openai-compat, anthropic-compat (anthropic-style), vendor-cli, acp, or a catalog provider id.',
      ),
    name: z.string().optional(),
    base_url: z.string().optional().describe('Provider endpoint.'),
    api_key: z.string().optional().describe('A literal, ${ENV_NAME}, or keychain:<provider>.'),
    disabled: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    models: z.array(providerModelSchema()).optional().describe('Extra models this provider offers.'),
    default_model: z.string().optional(),
    command: z.string().optional().describe('Vendor CLI or ACP child binary.'),
    args: z.array(z.string()).optional(),
    provider_options: providerOptionsSchema().optional(),
    timeout_seconds: z
      .number()
      .positive()
      .optional()
      .describe('Seconds to wait for the provider to start answering a request (default 600).'),
  }),
);
