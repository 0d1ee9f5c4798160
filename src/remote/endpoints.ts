/**
 * Where a delegation goes: the named endpoints (configured remotes and deployed agents), the
 * token of a URL's endpoint (scoped to that endpoint's origin: a card cannot move it elsewhere),
 * and the resolution of a target (a card URL, a name, or a capability matched against the skills
 * of the named endpoints' cards; a card fetched once by URL never wins a capability).
 * @module
 */
import { SvcError } from '../errors';
import type { Logger } from '../log';
import { type A2aHttp, fetchAgentCard, type TokenScope } from './a2a-client';
import { capabilityScore } from './a2a-wire';
import { type DelegateInput, type RemoteAgentDeps, safeOrigin } from './delegation-types';
import type { A2aStore, KnownCard, TargetKind, TaskRow } from './task-store';

export interface Endpoint {
  url: string;
  token?: string;
  source: string;
}

export interface ResolvedTarget {
  kind: TargetKind;
  value: string;
  card: KnownCard;
  /** The configured remote or deployed agent it resolved to (none for a card URL). */
  endpoint?: string;
  /** The token and the origin it may go to (the configured endpoint's). */
  auth: TokenScope;
}

export interface Endpoints {
  /** Configured remotes and deployed agents by name (a deployed agent wins a name). */
  all(): Promise<Map<string, Endpoint>>;
  /** The HTTP of a call, carrying `auth` (sent only to its origin). */
  httpFor(signal: AbortSignal, auth?: TokenScope): A2aHttp;
  /** The token to reach a tracked task's agent with, and its origin. */
  authForRow(row: TaskRow): Promise<TokenScope>;
  resolve(input: DelegateInput, signal: AbortSignal): Promise<ResolvedTarget>;
}

const endpointAuth = (endpoint: Endpoint): TokenScope => ({
  token: endpoint.token,
  origin: safeOrigin(endpoint.url),
});

const endpointName = (source: string) => source.slice(source.indexOf(':') + 1);

const CARD_TTL_MS = 10 * 60 * 1000;

export function createEndpoints(
  deps: Pick<RemoteAgentDeps, 'config' | 'deployed' | 'fetch' | 'clock'>,
  store: Pick<A2aStore, 'rememberCard' | 'cards'>,
  log: Logger,
): Endpoints {
  const all = async (): Promise<Map<string, Endpoint>> => {
    const out = new Map<string, Endpoint>();
    for (const [name, remote] of Object.entries(deps.config().a2a.remotes)) {
      out.set(name, { url: remote.url, token: remote.token, source: `remote:${name}` });
    }
    // A deployed agent of the same name wins: it is the one this machine runs.
    for (const agent of await deps.deployed())
      out.set(agent.name, { url: agent.url, token: agent.token, source: `deployed:${agent.name}` });
    return out;
  };

  /** The token of the endpoint a URL belongs to (same origin), scoped to that origin. */
  const authFor = async (url: string): Promise<TokenScope> => {
    const origin = safeOrigin(url);
    for (const endpoint of (await all()).values())
      if (origin && safeOrigin(endpoint.url) === origin) return endpointAuth(endpoint);
    return {};
  };

  const httpFor = (signal: AbortSignal, auth: TokenScope = {}): A2aHttp => ({
    fetch: deps.fetch,
    ...auth,
    signal,
  });

  const matchCapability = async (capability: string, signal: AbortSignal): Promise<ResolvedTarget> => {
    // Refresh the cards of every agent we can name (best effort), then score those cards only:
    // a card fetched once by URL (source 'url') is known but never chosen by capability.
    const named = new Map([...(await all()).values()].map((endpoint) => [endpoint.source, endpoint]));
    const cached = new Map((await store.cards()).map((card) => [card.source, card]));
    for (const endpoint of named.values()) {
      const fresh = cached.get(endpoint.source);
      if (fresh && deps.clock.now() - fresh.fetched_at < CARD_TTL_MS) continue;
      try {
        await store.rememberCard(
          await fetchAgentCard(endpoint.url, httpFor(signal, endpointAuth(endpoint))),
          endpoint.source,
        );
      } catch (error) {
        if (signal.aborted) throw error;
        log.warn('agent card refresh failed', {
          source: endpoint.source,
          error: SvcError.is(error) ? error.message : String(error),
        });
      }
    }
    const candidates = (await store.cards()).filter((card) => named.has(card.source));
    const ranked = candidates
      .map((card) => ({ card, score: capabilityScore(card.skills, card, capability) }))
      .filter((entry) => entry.score > 0)
      .sort((a, b) => b.score - a.score || a.card.name.localeCompare(b.card.name));
    const best = ranked[0];
    if (!best) {
      const skills = candidates.flatMap((card) => card.skills.map((skill) => `${card.name}:${skill.id}`));
      throw new SvcError(
        'not_found',
        `capability: no deployed or configured agent has a skill matching "${capability}"${skills.length ? `; known skills: ${skills.slice(0, 20).join(', ')}` : ' (no agent cards known yet: deploy an agent or configure [a2a.remotes])'}`,
      );
    }
    return {
      kind: 'capability' as const,
      value: capability,
      card: best.card,
      endpoint: endpointName(best.card.source),
      auth: endpointAuth(named.get(best.card.source) as Endpoint),
    };
  };

  const resolve = async (input: DelegateInput, signal: AbortSignal): Promise<ResolvedTarget> => {
    const given = [input.card_url, input.agent_name, input.capability].filter((v) => v !== undefined);
    if (given.length !== 1) {
      throw new SvcError(
        'invalid_input',
        'give exactly one of card_url, agent_name or capability (or task_id to check a tracked task)',
      );
    }
    if (input.card_url !== undefined) {
      const auth = await authFor(input.card_url);
      const fetched = await fetchAgentCard(input.card_url, httpFor(signal, auth));
      return {
        kind: 'card_url',
        value: input.card_url,
        card: await store.rememberCard(fetched, 'url'),
        auth,
      };
    }
    if (input.agent_name !== undefined) {
      const endpoint = (await all()).get(input.agent_name);
      if (!endpoint) {
        const names = [...(await all()).keys()];
        throw new SvcError(
          'not_found',
          `agent_name: no deployed or configured agent "${input.agent_name}"${names.length ? `; known: ${names.join(', ')}` : ''} (deploy one with deploy_agent or add [a2a.remotes.${input.agent_name}])`,
        );
      }
      const fetched = await fetchAgentCard(endpoint.url, httpFor(signal, endpointAuth(endpoint)));
      return {
        kind: 'name',
        value: input.agent_name,
        card: await store.rememberCard(fetched, endpoint.source),
        endpoint: input.agent_name,
        auth: endpointAuth(endpoint),
      };
    }
    return matchCapability(input.capability as string, signal);
  };

  return {
    all,
    httpFor,
    // The endpoint the task was sent through: its name, else the one its card URL belongs to.
    authForRow: async (row) => {
      const named = row.target_kind === 'name' ? (await all()).get(row.target) : undefined;
      return named ? endpointAuth(named) : authFor(row.card_url);
    },
    resolve,
  };
}
