/**
 * The session pack controller's public shape (`app.packs`): what the tools, routes, CLI, MCP
 * server and TUI `/pack` picker call.
 * @module
 */
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { SessionStart, ToolPolicy } from '../permissions/tool-policy';
import type { Redactor } from '../redact';
import type { CommandSpawner } from '../sandbox/spawn';
import type { SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import type { ApprovalDetails } from './approval';
import type { PackManifest, ToolNames } from './manifest';
import type { OperatingModeSnapshot } from './snapshot';
import type { HookRun, PackStore } from './store';

export interface PackControllerDeps {
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  config: () => Config;
  /** `session_operating_packs`, `pack_hook_runs` (./store.ts or its PostgreSQL twin). */
  store: PackStore;
  /** Whether the database file exists (a read-only projection must not create it). */
  dbPresent: () => boolean;
  sessions: SessionStore;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  redactor: Redactor;
  /** The registry's tool names and alias rules, for policy validation. */
  toolNames: () => ToolNames;
  /** Pack directories of installed plugins, discovered after workspace and user packs. */
  pluginPackDirs?: () => readonly string[];
  /** Starts hook commands like every command svc runs (OS sandbox, scrubbed environment). */
  spawner?: CommandSpawner;
}

/** What activating a pack would apply, for its approval ask (`PackController.preview`). */
export interface PackPreview {
  pack_name: string;
  /** Pass to `activate` as the approved digest. */
  digest: string;
  details: ApprovalDetails;
}

/** A pack in force in this process for one session. */
export interface AppliedPack {
  session_id: string;
  ref_revision: number;
  manifest: PackManifest;
  manifest_path: string;
  source: string;
  preset_id: string;
}

export interface PackListing {
  name: string;
  description: string;
  source: 'workspace' | 'user' | 'plugin';
  manifest_path: string;
  valid: boolean;
  errors: number;
  warnings: number;
}

export interface PresetListing {
  id: string;
  pack: string;
  description: string;
  /** Whether the preset's pack reference resolves to a manifest. */
  resolves: boolean;
}

export interface PackDiscovery {
  packs: PackListing[];
  presets: PresetListing[];
}

export interface ActivePackDetails {
  session_id: string;
  active_operating_pack: string;
  operating_mode_preset_id: string;
  pack_manifest_path?: string;
  source?: string;
  description: string;
  skills: string[];
  hooks: { event: string; tool?: string; timeout_seconds: number }[];
  policy: { mode: 'allowlist' | 'denylist' | 'none'; allow_rules: number; deny_rules: number };
  task_rules: string[];
  skill_rules: number;
  choreography: string;
  has_prompt_preamble: boolean;
  recent_hook_runs: {
    hook_index: number;
    event: string;
    status: HookRun['status'];
    exit_code: number | null;
    duration_ms: number;
    at: string;
  }[];
}

export interface PackController {
  /** Packs in the workspace and the user config dir, and the configured presets (files only). */
  discover(): PackDiscovery;
  /**
   * The operating-mode snapshot of a session. Reading may hydrate a persisted reference
   * (`last_action` hydrate). With `posture` (the `svc config show-operating-mode` projection) it
   * never hydrates or writes, the session is optional, and the CLI-only states `disabled` and
   * `unavailable` are reported instead of failing closed.
   */
  snapshot(sessionId: string | undefined, options?: { posture?: boolean }): Promise<OperatingModeSnapshot>;
  /**
   * Why this runtime has no pack-mutation provider (its database is open read-only), or
   * undefined when packs can be activated and cleared here.
   */
  mutationUnavailable(): string | undefined;
  /**
   * What activating `ref` would apply, for the approval ask (hooks and their commands, policy,
   * …: ./approval.ts), and the digest to pass to `activate`; undefined when it does not resolve to
   * a valid manifest. Records nothing.
   */
  preview(sessionId: string, ref: string): Promise<PackPreview | undefined>;
  /**
   * Activate a pack by preset id, path or name; a failure records `validation_failed` and throws.
   * With `approved` (a preview's digest), a pack that changed since that preview is refused.
   */
  activate(
    sessionId: string,
    ref: string,
    approved?: { digest: string },
  ): Promise<{ status: 'activated'; session_id: string; pack_name: string }>;
  clear(sessionId: string): Promise<{ status: 'cleared'; session_id: string }>;
  /** Metadata of the session's pack in force (never preamble, hook commands or rule bodies). */
  activePack(sessionId: string): Promise<ActivePackDetails>;
  /** The pack in force for a session in this process, hydrating a persisted reference. */
  applied(sessionId: string): Promise<AppliedPack | undefined>;
  /**
   * Pushed into `app.promptSections`: the pack preamble and rules for the session's system prompt.
   * With packs off, or for a run's start that inserted its session (`start.inserted`: no pack row
   * can precede it), `undefined` at once (no promise, no read).
   */
  promptSection(
    sessionId: string,
    start?: SessionStart,
  ): { source: string; text: string } | undefined | Promise<{ source: string; text: string } | undefined>;
  /**
   * Pushed into `app.policyProviders`: the pack's funnel layer (agent_policy stage). With packs off,
   * no session, or a run's start that inserted its session (`start.inserted`), `[]` at once (no
   * promise, no read).
   */
  policies(sessionId: string | undefined, start?: SessionStart): ToolPolicy[] | Promise<ToolPolicy[]>;
  /** The choreography preset the session's pack asks for (read by adaptive orchestration). */
  choreography(sessionId: string): Promise<string | undefined>;
  /** Resolves when every queued hook has finished. */
  hooksIdle(): Promise<void>;
  close(): Promise<void>;
}
