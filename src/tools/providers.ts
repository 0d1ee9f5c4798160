/**
 * The providers tool family (native-tools.tsv: get_provider_status, get_provider_auth_wizard,
 * list_models) plus get_model_selection. One definition each, served as a native tool, an HTTP
 * route, an MCP tool and a CLI command.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import {
  authWizard,
  listModels,
  type ModelList,
  type ModelSelectionReport,
  modelSelection,
  providerStatus,
} from '../providers/reports';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';

export const getProviderStatusInput = () =>
  z.strictObject({
    provider: z
      .string()
      .min(1)
      .optional()
      .describe('Only this provider id (e.g. anthropic). Omit for every provider.'),
  });

export const getProviderStatus = defineTool({
  name: 'get_provider_status',
  family: 'providers',
  tag: 'primitive',
  description:
    'Which model providers are configured, ready (a usable credential or identity), ambiguous (two credential sources disagree) and refreshed (catalog metadata from svc update-providers), with each credential source described but never shown, and what a provider still needs. Not the model catalog (list_models) and not the next model (get_model_selection).',
  input: getProviderStatusInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/provider-status' },
    mcp: 'svc_get_provider_status',
    cli: {
      command: 'config show-provider-status',
      description: 'which providers are configured, ready, ambiguous, refreshed (no secrets)',
      text: renderStatus,
    },
  },
  examples: [{}, { provider: 'anthropic' }],
  async run(ctx, input) {
    const status = providerStatus(ctx.app.providers);
    if (!input.provider) return status;
    const providers = status.providers.filter((p) => p.id === input.provider);
    if (providers.length === 0)
      throw new SvcError(
        'not_found',
        `provider: unknown provider "${input.provider}"; svc config show-provider-status lists them`,
      );
    return { ...status, providers };
  },
});

export const getModelSelectionInput = () =>
  z.strictObject({
    session_id: sessionIdInput('none', 'Session whose model override applies. Omit for no session.'),
    agent: z
      .string()
      .min(1)
      .optional()
      .describe('Agent id whose [agents.<id>] model applies. Omit for none (or the session agent).'),
    purpose: z
      .enum(['large', 'small'])
      .default('large')
      .describe('large: main turns; small: cheap internal calls such as titles and summaries.'),
  });

export const getModelSelection = defineTool({
  name: 'get_model_selection',
  family: 'providers',
  tag: 'primitive',
  description:
    'Which model selector the next turn uses and why: session override, agent config, the [models] default, or the first ready provider. Does not prove credentials (see get_provider_status).',
  input: getModelSelectionInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/model-selection' },
    mcp: 'svc_get_model_selection',
    cli: {
      command: 'config show-model-selection',
      description: 'which selector the next turn uses, and why',
      text: renderSelection,
    },
  },
  examples: [{}, { purpose: 'small' }, { agent: 'build' }],
  async run(ctx, input) {
    const { app } = ctx;
    let sessionModel: string | null | undefined;
    let sessionAgent: string | null | undefined;
    if (input.session_id) {
      const session = await app.sessions.get(input.session_id);
      if (!session)
        throw new SvcError('not_found', `session_id: no session "${input.session_id}"; see list_sessions`);
      sessionModel = session.model;
      sessionAgent = session.agent;
    }
    const agent = input.agent ?? sessionAgent ?? undefined;
    const agentModel = agent ? app.config.agents[agent]?.model : undefined;
    return modelSelection(app.providers, input, { sessionModel, sessionAgent, agentModel });
  },
});

export const getProviderAuthWizardInput = () =>
  z.strictObject({
    provider: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A provider id or platform (copilot, hyper, openrouter, chatgpt, bedrock, claude…). Omit for all.',
      ),
  });

export const getProviderAuthWizard = defineTool({
  name: 'get_provider_auth_wizard',
  family: 'providers',
  tag: 'primitive',
  description:
    'Which `svc auth <platform>` command the human operator must run, and why (OAuth sign-ins, cloud identity checks, vendor CLI setup checks). Agents never run OAuth: ask the operator to run the command.',
  input: getProviderAuthWizardInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_provider_auth_wizard',
    cli: {
      command: 'auth wizard',
      description: 'which svc auth command to run next, and why',
      text: (r: ReturnType<typeof authWizard>) =>
        [
          r.next ? `next: ${r.next.command}\n  ${r.next.why}` : 'next: nothing to do for the selected model',
          '',
          ...r.platforms.map(
            (p) => `${p.status.padEnd(14)} ${p.command.padEnd(26)} ${p.provider}: ${p.flow}`,
          ),
          '',
          r.note,
        ].join('\n'),
    },
  },
  run: async (ctx, input) => authWizard(ctx.app.providers, input),
});

export const listModelsInput = () =>
  z.strictObject({
    provider: z.string().min(1).optional().describe('Only this provider id. Omit for the whole catalog.'),
  });

export const listModelsTool = defineTool({
  name: 'list_models',
  family: 'providers',
  tag: 'primitive',
  description:
    'The raw model catalog (embedded, plus metadata refreshed by svc update-providers): every provider/model with context window, max output, pricing per 1M tokens and capabilities, in the OpenAI list shape. Inventory only: not a proof that a provider has credentials.',
  input: listModelsInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/models', errors: 'flat' },
    mcp: 'svc_list_models',
    cli: {
      command: 'models',
      description: 'the raw model catalog (svc update-providers refreshes it)',
      text: renderModels,
    },
  },
  examples: [{}, { provider: 'openai' }],
  run: async (ctx, input) => listModels(ctx.app.providers, input),
});

function renderStatus(status: ReturnType<typeof providerStatus>): string {
  const lines = status.providers.map((p) => {
    const flags = [
      p.configured ? 'configured' : '',
      p.ready ? 'ready' : 'not ready',
      p.ambiguous ? 'AMBIGUOUS' : '',
      p.refreshed ? 'refreshed' : '',
    ]
      .filter(Boolean)
      .join(', ');
    const detail = p.ready ? (p.credential_source ?? '') : (p.reason ?? '');
    return `${p.id.padEnd(16)} ${flags.padEnd(34)} ${detail}${p.ambiguity ? `\n${' '.repeat(17)}${p.ambiguity}` : ''}`;
  });
  const store = status.credential_store as { backend?: string; path?: string; keyring_error?: string };
  return [
    ...lines,
    '',
    `${status.counts.ready}/${status.counts.total} ready, ${status.counts.configured} configured, ${status.counts.ambiguous} ambiguous, ${status.counts.refreshed} refreshed`,
    `default models: large ${status.default_models.large ?? '(unset)'}, small ${status.default_models.small ?? '(unset)'}`,
    `credential store: ${store.backend ?? '?'} ${store.path ?? ''}${store.keyring_error ? ` (keyring unavailable: ${store.keyring_error})` : ''}`,
    renderCatalog(status.catalog),
  ].join('\n');
}

function renderCatalog(catalog: ReturnType<typeof providerStatus>['catalog']): string {
  const { cache } = catalog;
  const legacy = cache.legacy_ignored
    ? `\nthe catalog cache ${cache.legacy_ignored} in the data dir is not read (a workspace could carry it); svc update-providers <url-or-file> refreshes the one in the user cache dir`
    : '';
  return renderCache(catalog) + legacy;
}

function renderCache(catalog: ReturnType<typeof providerStatus>['catalog']): string {
  const { cache } = catalog;
  const head = `catalog: embedded ${catalog.embedded_version}`;
  if (!cache.exists) return head;
  if (cache.ignored) return `${head}, cache ${cache.version ?? '?'} (ignored: disable_provider_auto_update)`;
  if (cache.valid === false) {
    return `${head}; the cache ${cache.path} is not used (${cache.error ?? 'invalid'}): svc update-providers <url-or-file> replaces it, svc update-providers embedded removes it`;
  }
  const refused = Object.keys(cache.refused ?? {});
  return `${head}, cache ${cache.version ?? '?'}${refused.length ? ` (fields not taken for ${refused.join(', ')}: svc update-providers says why)` : ''}`;
}

function renderSelection(r: ModelSelectionReport): string {
  return [
    `${r.purpose}: ${r.selector ?? '(none)'}`,
    `source: ${r.source} (${r.reason})`,
    ...(r.problem ? [`problem: ${r.problem}`] : []),
    'candidates:',
    ...r.candidates.map(
      (c) => `  ${c.applies ? '*' : ' '} ${c.source.padEnd(12)} ${c.selector ?? '-'}  (${c.note})`,
    ),
    ...(r.tpm_recovery.provider_model_fallback.length
      ? [`rate-limit fallback: ${r.tpm_recovery.provider_model_fallback.join(' → ')}`]
      : []),
  ].join('\n');
}

function renderModels(list: ModelList): string {
  const money = (v: number | null) => (v === null ? '-' : `$${v}`);
  const rows = list.data.map((m) => {
    const caps = [m.tool_call ? 'tools' : '', m.reasoning ? 'reasoning' : '', m.attachments ? 'images' : '']
      .filter(Boolean)
      .join(',');
    return `${m.id.padEnd(64)} ${String(m.context_window ?? '-').padStart(8)} ${String(m.max_output ?? '-').padStart(7)}  ${money(m.cost_per_1m_in)}/${money(m.cost_per_1m_out)}  ${caps}`;
  });
  const providers = new Set(list.data.map((m) => m.provider)).size;
  return [
    `${'model'.padEnd(64)} ${'context'.padStart(8)} ${'output'.padStart(7)}  in/out per 1M  capabilities`,
    ...rows,
    '',
    `${list.data.length} models from ${providers} providers (catalog inventory; credentials: svc config show-provider-status)`,
  ].join('\n');
}
