/**
 * The App's shape and createApp's options, apart from the wiring (src/app.ts) so the wiring's
 * phases (src/app/*.ts) can name them without importing app.ts.
 * @module
 */
import type { WorkspaceTrustInput } from '../config/trust';
import type { RunEngine } from '../engine/run-engine';
import type { Logger } from '../log';
import type { McpAuthStore } from '../mcp-client/auth-store';
import type { SqlClient } from '../store/postgres/client';
import type { AnyTool, ToolHost } from '../tools/core/types';
import type { Clock, Ids } from '../util/ids';

export interface AppOptions {
  workspace: string;
  dataDir?: string;
  env?: Record<string, string | undefined>;
  configFile?: string;
  overrides?: string[];
  /** What the surface says about the workspace's trust (config/trust.ts); unset: headless. */
  workspaceTrust?: WorkspaceTrustInput;
  clock?: Clock;
  ids?: Ids;
  fetch?: typeof fetch;
  log?: Logger;
  tools?: readonly AnyTool[];
  /** Open the database at start (servers) instead of on first use (CLI reads). */
  eagerDb?: boolean;
  /**
   * A serving node (`svc service start`): with `[engine] kind = "dbos"` its root runs are durable
   * workflows and it takes over the runs of nodes that died (issue 19). Other processes (a CLI
   * command, `svc run`) run in-process and never pick up another node's run.
   */
  durableRuns?: boolean;
  /**
   * Open an existing database read-only (inspecting a data dir this process must not write).
   * Domains that persist report it; operating packs then have no pack-mutation provider.
   */
  readOnlyDb?: boolean;
  /**
   * Build the session pack controller (default true). A minimal runtime that hosts no sessions
   * passes false: it has no operating-mode parity (routes answer 503, pack tools are absent).
   */
  packs?: boolean;
  /**
   * Build the adaptive orchestration layer (default true). A runtime without it has no
   * coordinator-backed adaptive parity: `get_adaptive_orchestration` is absent.
   */
  adaptive?: boolean;
  /**
   * The PostgreSQL store to serve from (issue 18), connected and migrated by the caller (`svc
   * service start` with `[store] url`). Without it the App keeps its state in SQLite.
   */
  postgres?: SqlClient;
  /**
   * Connect to (and migrate) the PostgreSQL store `[store] url` names (default true). `svc doctor
   * --store` passes false: it inspects the database as it is, and needs no store of the App's.
   */
  connectStore?: boolean;
  /** Where MCP client OAuth credentials live; default `<user config dir>/svc/mcp-auth.json`. */
  mcpAuthStore?: McpAuthStore;
}

/**
 * The App: the tool host (every domain service, under the names tool handlers use) as createApp
 * wires it. Surfaces see the App; tool handlers see the ToolHost (src/tools/core/types.ts).
 */
export interface App extends ToolHost {
  /** What runs the agent's runs (issue 19, docs/engine.md): in-process by default. */
  readonly engine: RunEngine;
}
