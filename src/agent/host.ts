/**
 * The agent's host, built from its deps: what its modules read, under the member names a
 * ToolHost has too. The config and the layers built after the agent are read
 * through when used, never captured.
 * @module
 */
import type { AgentDeps, AgentHost, PromptSection } from './deps';

export function createAgentHost(deps: AgentDeps, promptSections: readonly PromptSection[]): AgentHost {
  return {
    workspace: deps.workspace,
    dataDir: deps.dataDir,
    env: deps.env,
    clock: deps.clock,
    ids: deps.ids,
    log: deps.log,
    redactor: deps.redactor,
    get config() {
      return deps.config();
    },
    store: { transactions: deps.transactions },
    bus: deps.bus,
    sessions: deps.sessions,
    runs: deps.runs,
    permissions: deps.permissions,
    models: deps.models,
    providers: deps.providers,
    telemetry: deps.telemetry,
    observe: deps.observe,
    get adaptive() {
      return deps.adaptive();
    },
    get mcpClients() {
      return deps.mcpClients();
    },
    promptSections,
    funnelContext: deps.funnelContext,
    onClose: deps.onClose,
  };
}

/**
 * The host as a run against another checkout sees it: the same services, with `workspace`
 * replaced (spawn_worktree_override). Everything else is read through to the agent's host.
 */
export function withWorkspace(host: AgentHost, root: string): AgentHost {
  return Object.create(host, { workspace: { value: root, enumerable: true } }) as AgentHost;
}
