/**
 * The session pack controller: the one service behind `get_operating_mode`, `session_set_pack`,
 * `session_clear_pack`, `session_list_packs`, `session_get_active_pack`, the
 * `/v1/session-operating-mode` routes, `svc config show-operating-mode`, the MCP tool and the
 * TUI `/pack` picker. It persists each session's pack reference, applies the pack in this process
 * (prompt section, funnel policy, hooks on bus events) and hydrates a reference persisted by
 * another process or before a restart. State transitions: docs/operating-mode.md.
 * @module
 */
import { readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { EventBus, SessionEvent } from '../events/bus';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { SessionStore } from '../sessions/session-store';
import type { Db } from '../store/db';
import type { ToolPolicy } from '../tools/funnel';
import type { Clock } from '../util/ids';
import { packPolicy, policyMode, renderPackPrompt, summarize } from './apply';
import { discoverPacks, type ResolvedRef, resolveRef, sourceOf } from './discovery';
import { hookEnv, runHookCommand } from './hooks';
import {
  HOOK_EVENTS,
  type PackDiagnostic,
  type PackManifest,
  type ParsedManifest,
  parseManifestText,
  type ToolNames,
  toolMatcher,
} from './manifest';
import { buildSnapshot, type OperatingModeSnapshot, type OperatingModeState } from './snapshot';
import { createPackStore, emptyRow, type HookRun, type PackRow, type PackStore } from './store';

export interface PackControllerDeps {
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  config: () => Config;
  db: () => Db;
  /** Whether the database file exists (a read-only projection must not create it). */
  dbPresent: () => boolean;
  sessions: SessionStore;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  redactor: Redactor;
  /** The registry's tool names and alias rules, for policy validation. */
  toolNames: () => ToolNames;
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
  source: 'workspace' | 'user';
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
  snapshot(sessionId: string | undefined, options?: { posture?: boolean }): OperatingModeSnapshot;
  /**
   * Why this runtime has no pack-mutation provider (its database is open read-only), or
   * undefined when packs can be activated and cleared here.
   */
  mutationUnavailable(): string | undefined;
  /** Activate a pack by preset id, path or name; a failure records `validation_failed` and throws. */
  activate(sessionId: string, ref: string): { status: 'activated'; session_id: string; pack_name: string };
  clear(sessionId: string): { status: 'cleared'; session_id: string };
  /** Metadata of the session's pack in force (never preamble, hook commands or rule bodies). */
  activePack(sessionId: string): ActivePackDetails;
  /** The pack in force for a session in this process, hydrating a persisted reference. */
  applied(sessionId: string): AppliedPack | undefined;
  /** Pushed into `app.promptSections`: the pack preamble and rules for the session's system prompt. */
  promptSection(sessionId: string): { source: string; text: string } | undefined;
  /** Pushed into `app.policyProviders`: the pack's funnel layer (agent_policy stage). */
  policies(sessionId: string | undefined): ToolPolicy[];
  /** The choreography preset the session's pack asks for (read by adaptive orchestration). */
  choreography(sessionId: string): string | undefined;
  /** Resolves when every queued hook has finished. */
  hooksIdle(): Promise<void>;
  close(): Promise<void>;
}

const HOOK_EVENT_SET = new Set<string>(HOOK_EVENTS);
const READ_ONLY_REASON =
  'the database is open read-only, so this runtime has no pack-mutation provider: operating packs can be read but not activated or cleared here';

export function createPackController(deps: PackControllerDeps): PackController {
  const store: PackStore = createPackStore(deps.db);
  const applied = new Map<string, AppliedPack>();
  /** Hydration outcomes a read-only process could not persist, by session (same ref_revision only). */
  const overlays = new Map<string, PackRow>();
  const queues = new Map<string, Promise<void>>();
  const running = new AbortController();
  let closed = false;
  const log = deps.log.child({ component: 'packs' });

  const enabled = () => deps.config().options.operating_packs === true;
  const now = () => deps.clock.now();

  const requireEnabled = () => {
    if (!enabled()) {
      throw new SvcError(
        'not_found',
        'operating packs are disabled: set options.operating_packs = true to use them',
      );
    }
  };

  const mutationUnavailable = (): string | undefined => {
    const db = deps.db();
    if (db.readonly) return READ_ONLY_REASON;
    if (db.pragma('query_only', { simple: true })) return READ_ONLY_REASON;
    return undefined;
  };

  const readRow = (sessionId: string): PackRow | undefined => {
    const row = store.get(sessionId);
    const overlay = overlays.get(sessionId);
    if (overlay && row && overlay.ref_revision === row.ref_revision) return overlay;
    return row;
  };

  /** Persist a row; a read-only process keeps it as this process's overlay instead. */
  const save = (row: PackRow) => {
    if (mutationUnavailable()) {
      overlays.set(row.session_id, row);
      return;
    }
    overlays.delete(row.session_id);
    store.put(row);
  };

  const loadManifest = (
    manifestPath: string,
    options: { expectedName?: string; overrides?: Record<string, unknown>; presetId?: string },
  ): ParsedManifest => {
    let text: string;
    try {
      text = readFileSync(manifestPath, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      return {
        digest: '',
        diagnostics: [
          {
            section: 'pack',
            field: 'pack.toml',
            level: 'error',
            message: `cannot read the manifest (${code})`,
          },
        ],
      };
    }
    return parseManifestText(text, { ...options, tools: deps.toolNames() });
  };

  const loadResolved = (resolved: ResolvedRef): ParsedManifest =>
    loadManifest(resolved.target.manifest_path, {
      expectedName: resolved.target.kind === 'name' ? resolved.target.expected_name : undefined,
      overrides: resolved.preset_id ? resolved.overrides : undefined,
      presetId: resolved.preset_id || undefined,
    });

  const discoveryEnv = () => ({ workspace: deps.workspace, env: deps.env });

  /** Re-apply a persisted reference in this process; records `last_action` hydrate. */
  const hydrate = (row: PackRow): PackRow => {
    let parsed: ParsedManifest;
    const presets = deps.config().options.operating_mode_presets;
    const preset = row.preset_id ? presets[row.preset_id] : undefined;
    if (row.preset_id && !preset) {
      parsed = {
        digest: '',
        diagnostics: [
          {
            section: 'preset',
            field: `operating_mode_presets.${row.preset_id}`,
            level: 'error',
            message: 'the preset this pack was activated with is no longer configured',
          },
        ],
      };
    } else {
      const discovered = row.source === 'workspace' || row.source === 'user';
      parsed = loadManifest(row.manifest_path, {
        expectedName: discovered ? basename(dirname(row.manifest_path)) : undefined,
        overrides: preset ? (preset.overrides ?? {}) : undefined,
        presetId: row.preset_id || undefined,
      });
    }
    if (!parsed.manifest) {
      applied.delete(row.session_id);
      const reason = `pack "${row.pack_name}" could not be hydrated from ${row.manifest_path}: ${firstError(parsed.diagnostics)}`;
      const next: PackRow = {
        ...row,
        last_action: 'hydrate',
        failure_state: 'hydration_failed',
        failure_reason: reason,
        diagnostics: parsed.diagnostics,
      };
      if (!sameOutcome(row, next)) {
        save({ ...next, updated_at: now() });
        log.warn('pack hydration failed', { session_id: row.session_id, pack: row.pack_name });
      }
      return readRow(row.session_id) ?? next;
    }
    const manifest = parsed.manifest;
    applied.set(row.session_id, {
      session_id: row.session_id,
      ref_revision: row.ref_revision,
      manifest,
      manifest_path: row.manifest_path,
      source: row.source,
      preset_id: row.preset_id,
    });
    const keepValidation = row.failure_state === 'validation_failed';
    const next: PackRow = {
      ...row,
      pack_name: manifest.name,
      digest: parsed.digest,
      summary: summarize(manifest),
      last_action: 'hydrate',
      failure_state: keepValidation ? row.failure_state : '',
      failure_reason: keepValidation ? row.failure_reason : '',
      diagnostics: keepValidation ? row.diagnostics : parsed.diagnostics,
    };
    if (!sameOutcome(row, next)) save({ ...next, updated_at: now() });
    log.info('pack hydrated', { session_id: row.session_id, pack: manifest.name });
    return readRow(row.session_id) ?? next;
  };

  /** The row after making sure this process applies what it references. */
  const ensureApplied = (row: PackRow): PackRow => {
    if (!row.active) {
      applied.delete(row.session_id);
      return row;
    }
    const current = applied.get(row.session_id);
    if (current && current.ref_revision === row.ref_revision && row.failure_state !== 'hydration_failed') {
      return row;
    }
    return hydrate(row);
  };

  const appliedFor = (sessionId: string): AppliedPack | undefined => {
    if (!enabled()) return undefined;
    const row = readRow(sessionId);
    if (!row) {
      applied.delete(sessionId);
      return undefined;
    }
    ensureApplied(row);
    return applied.get(sessionId);
  };

  /** For the prompt, funnel and hook paths: a storage problem is logged, and no pack applies. */
  const warned = new Map<string, string>();
  const safeApplied = (sessionId: string): AppliedPack | undefined => {
    try {
      const pack = appliedFor(sessionId);
      warned.delete(sessionId);
      return pack;
    } catch (error) {
      // Logged once per session and cause: the funnel asks on every turn.
      const message = describeError(error);
      if (warned.get(sessionId) !== message) {
        warned.set(sessionId, message);
        log.warn('operating pack not applied', { session_id: sessionId, error: message });
      }
      return undefined;
    }
  };

  const fail = (
    current: PackRow,
    requested: string,
    diagnostics: PackDiagnostic[],
    reason: string,
  ): never => {
    save({
      ...current,
      last_action: 'activate',
      failure_state: 'validation_failed',
      failure_reason: reason,
      diagnostics,
      updated_at: now(),
    });
    log.info('pack activation failed', { session_id: current.session_id, errors: diagnostics.length });
    throw new SvcError('invalid_input', `pack_path_or_name: ${reason}`, {
      details: { requested, diagnostics },
    });
  };

  const requireMutations = () => {
    const reason = mutationUnavailable();
    if (reason) throw new SvcError('unavailable', reason);
  };

  const postureState = (): { state: OperatingModeState; reason?: string; diagnostics?: PackDiagnostic[] } => {
    if (!deps.dbPresent()) return { state: 'enabled_inactive' };
    try {
      const reason = mutationUnavailable();
      return reason
        ? { state: 'mutation_unavailable', diagnostics: [mutationDiagnostic(reason)] }
        : { state: 'enabled_inactive' };
    } catch (error) {
      return { state: 'persistence_unavailable', reason: describeError(error) };
    }
  };

  // Hooks: one subscription; each session's hooks run in event order, off the publisher's path.
  const unsubscribe = deps.bus.subscribe('*', (event) => {
    if (closed || !HOOK_EVENT_SET.has(event.type)) return;
    const pack = safeApplied(event.session_id);
    if (!pack) return;
    const tool = typeof event.payload.tool === 'string' ? event.payload.tool : undefined;
    const hooks = pack.manifest.hooks
      .map((hook, index) => ({ hook, index }))
      .filter(
        ({ hook }) =>
          hook.event === event.type && (!hook.tool || (tool !== undefined && toolMatcher(hook.tool)(tool))),
      );
    if (hooks.length === 0) return;
    const previous = queues.get(event.session_id) ?? Promise.resolve();
    const next = previous.then(async () => {
      for (const { hook, index } of hooks) {
        if (closed) return;
        await runHook(pack, hook, index, event);
      }
    });
    queues.set(event.session_id, next);
    void next.finally(() => {
      if (queues.get(event.session_id) === next) queues.delete(event.session_id);
    });
  });

  const runHook = async (
    pack: AppliedPack,
    hook: PackManifest['hooks'][number],
    index: number,
    event: SessionEvent,
  ) => {
    const startedAt = now();
    const payload = JSON.stringify({
      type: event.type,
      event_id: event.id,
      session_id: event.session_id,
      pack: pack.manifest.name,
      payload: deps.redactor.value(event.payload),
    });
    const context: Record<string, string> = {
      SVC_HOOK_EVENT: event.type,
      SVC_SESSION_ID: event.session_id,
      SVC_PACK: pack.manifest.name,
      SVC_WORKSPACE: deps.workspace,
      SVC_EVENT_ID: String(event.id),
    };
    if (typeof event.payload.run_id === 'string') context.SVC_RUN_ID = event.payload.run_id;
    if (typeof event.payload.tool === 'string') context.SVC_TOOL = event.payload.tool;
    const outcome = await runHookCommand({
      command: hook.command,
      cwd: deps.workspace,
      env: hookEnv(deps.env, context, deps.redactor),
      stdin: payload,
      timeoutMs: hook.timeout_seconds * 1000,
      signal: running.signal,
    });
    const run: HookRun = {
      session_id: event.session_id,
      pack_name: pack.manifest.name,
      hook_index: index,
      event: event.type,
      event_id: event.id,
      status: outcome.status,
      exit_code: outcome.exit_code,
      duration_ms: outcome.duration_ms,
      started_at: startedAt,
    };
    // Never the command: index and event identify the hook.
    log.info('pack hook finished', { ...run });
    try {
      if (!mutationUnavailable()) store.recordHookRun(run);
    } catch (error) {
      log.warn('pack hook outcome not recorded', {
        session_id: event.session_id,
        error: describeError(error),
      });
    }
  };

  return {
    discover() {
      const env = discoveryEnv();
      const packs = discoverPacks(env).map((pack): PackListing => {
        const parsed = loadManifest(pack.manifest_path, { expectedName: pack.name });
        return {
          name: pack.name,
          description: parsed.manifest?.description ?? '',
          source: pack.source,
          manifest_path: pack.manifest_path,
          valid: parsed.manifest !== undefined,
          errors: parsed.diagnostics.filter((d) => d.level === 'error').length,
          warnings: parsed.diagnostics.filter((d) => d.level === 'warning').length,
        };
      });
      const presetMap = deps.config().options.operating_mode_presets;
      const presets = Object.entries(presetMap)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([id, preset]) => ({
          id,
          pack: preset.pack,
          description: preset.description ?? '',
          resolves: resolveRef(id, { ...env, presets: presetMap }) !== undefined,
        }));
      return { packs, presets };
    },

    snapshot(sessionId, options = {}) {
      const posture = options.posture === true;
      const id = sessionId ?? '';
      const base = { session_id: id, enabled: enabled() };
      if (!base.enabled) {
        if (!posture) requireEnabled();
        return buildSnapshot(
          {
            ...base,
            state: 'disabled',
            reason: 'options.operating_packs is false; set it to true to use operating packs',
            evidence_at: now(),
          },
          deps.redactor,
        );
      }
      if (!sessionId) {
        if (!posture) {
          throw new SvcError('invalid_input', 'session_id: required (no current session to default to)');
        }
        return buildSnapshot({ ...base, ...postureState(), evidence_at: now() }, deps.redactor);
      }
      let session: ReturnType<SessionStore['get']>;
      let row: PackRow | undefined;
      try {
        session = posture && !deps.dbPresent() ? undefined : deps.sessions.get(sessionId);
      } catch (error) {
        return buildSnapshot(
          { ...base, state: 'persistence_unavailable', reason: describeError(error), evidence_at: now() },
          deps.redactor,
        );
      }
      if (!session) {
        if (!posture)
          throw new SvcError('not_found', `session_id: no session "${sessionId}"; see svc session list`);
        return buildSnapshot(
          {
            ...base,
            state: 'unavailable',
            reason: `no session "${sessionId}" in this workspace`,
            evidence_at: now(),
          },
          deps.redactor,
        );
      }
      try {
        row = readRow(sessionId);
        if (row && !posture) row = ensureApplied(row);
      } catch (error) {
        // A row that exists but cannot be decoded is a serialization failure, not a storage outage.
        if (SvcError.is(error) && error.details?.reason === 'serialization') throw error;
        return buildSnapshot(
          { ...base, state: 'persistence_unavailable', reason: describeError(error), evidence_at: now() },
          deps.redactor,
        );
      }
      const readOnly = mutationUnavailable();
      let state: OperatingModeState;
      let diagnostics = row?.diagnostics ?? [];
      if (row?.failure_state) state = row.failure_state;
      else if (readOnly) {
        state = 'mutation_unavailable';
        diagnostics = [...diagnostics, mutationDiagnostic(readOnly)];
      } else state = row?.active ? 'active' : 'enabled_inactive';
      return buildSnapshot(
        { ...base, state, row, diagnostics, evidence_at: row?.updated_at ?? session.created_at },
        deps.redactor,
      );
    },

    mutationUnavailable,

    activate(sessionId, ref) {
      requireEnabled();
      deps.sessions.require(sessionId);
      requireMutations();
      const current = readRow(sessionId) ?? emptyRow(sessionId, now());
      const presets = deps.config().options.operating_mode_presets;
      const resolved = resolveRef(ref, { ...discoveryEnv(), presets });
      if (!resolved) {
        const presetTarget = Object.hasOwn(presets, ref) ? presets[ref].pack : undefined;
        const diagnostics: PackDiagnostic[] = [
          presetTarget !== undefined
            ? {
                section: 'preset',
                field: `operating_mode_presets.${ref}.pack`,
                level: 'error',
                message:
                  'the preset names no pack found in the workspace or user config dir, and no manifest path',
              }
            : {
                section: 'pack',
                field: 'pack_path_or_name',
                level: 'error',
                message: 'no preset id, pack manifest path or pack name matches; see session_list_packs',
              },
        ];
        return fail(
          current,
          ref,
          diagnostics,
          `no preset, pack or manifest matches "${ref}"; see session_list_packs`,
        );
      }
      const parsed = loadResolved(resolved);
      if (!parsed.manifest) {
        return fail(
          current,
          ref,
          parsed.diagnostics,
          `pack "${ref}" failed validation: ${firstError(parsed.diagnostics)}`,
        );
      }
      const manifest = parsed.manifest;
      const row: PackRow = {
        session_id: sessionId,
        active: true,
        pack_name: manifest.name,
        requested: ref,
        manifest_path: resolved.target.manifest_path,
        source: sourceOf(resolved.target.manifest_path, discoveryEnv()),
        preset_id: resolved.preset_id,
        digest: parsed.digest,
        summary: summarize(manifest),
        ref_revision: current.ref_revision + 1,
        last_action: 'activate',
        failure_state: '',
        failure_reason: '',
        diagnostics: parsed.diagnostics,
        updated_at: now(),
      };
      save(row);
      applied.set(sessionId, {
        session_id: sessionId,
        ref_revision: row.ref_revision,
        manifest,
        manifest_path: row.manifest_path,
        source: row.source,
        preset_id: row.preset_id,
      });
      log.info('pack activated', { session_id: sessionId, pack: manifest.name, preset: row.preset_id });
      return { status: 'activated', session_id: sessionId, pack_name: ref };
    },

    clear(sessionId) {
      requireEnabled();
      deps.sessions.require(sessionId);
      requireMutations();
      const current = readRow(sessionId);
      save({
        ...emptyRow(sessionId, now()),
        ref_revision: (current?.ref_revision ?? 0) + 1,
        last_action: 'clear',
      });
      applied.delete(sessionId);
      log.info('pack cleared', { session_id: sessionId });
      return { status: 'cleared', session_id: sessionId };
    },

    activePack(sessionId) {
      requireEnabled();
      deps.sessions.require(sessionId);
      const pack = appliedFor(sessionId);
      const runs = pack ? store.hookRuns(sessionId, 10) : [];
      const manifest = pack?.manifest;
      return {
        session_id: sessionId,
        active_operating_pack: manifest?.name ?? '',
        operating_mode_preset_id: pack?.preset_id ?? '',
        ...(pack ? { pack_manifest_path: pack.manifest_path, source: pack.source } : {}),
        description: manifest?.description ?? '',
        skills: manifest?.skills ?? [],
        hooks: (manifest?.hooks ?? []).map((h) => ({
          event: h.event,
          ...(h.tool ? { tool: h.tool } : {}),
          timeout_seconds: h.timeout_seconds,
        })),
        policy: {
          mode: manifest ? policyMode(manifest) : 'none',
          allow_rules: manifest?.policy.filter((r) => r.effect === 'allow').length ?? 0,
          deny_rules: manifest?.policy.filter((r) => r.effect === 'deny').length ?? 0,
        },
        task_rules: (manifest?.task_rules ?? []).map((r) => r.name),
        skill_rules: manifest?.skill_rules.length ?? 0,
        choreography: manifest?.choreography ?? '',
        has_prompt_preamble: manifest ? manifest.preamble.trim() !== '' : false,
        recent_hook_runs: runs
          .filter((r) => r.pack_name === manifest?.name)
          .map((r) => ({
            hook_index: r.hook_index,
            event: r.event,
            status: r.status,
            exit_code: r.exit_code,
            duration_ms: r.duration_ms,
            at: new Date(r.started_at).toISOString(),
          })),
      };
    },

    applied: (sessionId) => appliedFor(sessionId),

    promptSection(sessionId) {
      const pack = safeApplied(sessionId);
      const text = pack ? renderPackPrompt(pack.manifest) : undefined;
      return pack && text ? { source: `pack ${pack.manifest.name}`, text } : undefined;
    },

    policies(sessionId) {
      if (!sessionId) return [];
      const pack = safeApplied(sessionId);
      const policy = pack ? packPolicy(pack.manifest) : undefined;
      return policy ? [policy] : [];
    },

    choreography(sessionId) {
      return safeApplied(sessionId)?.manifest.choreography || undefined;
    },

    async hooksIdle() {
      while (queues.size > 0) await Promise.allSettled([...queues.values()]);
    },

    async close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      running.abort();
      await Promise.allSettled([...queues.values()]);
    },
  };
}

function mutationDiagnostic(reason: string): PackDiagnostic {
  return { section: 'persistence', field: 'mutation_provider', level: 'warning', message: reason };
}

function firstError(diagnostics: PackDiagnostic[]): string {
  const first = diagnostics.find((d) => d.level === 'error') ?? diagnostics[0];
  if (!first) return 'invalid';
  const count = diagnostics.filter((d) => d.level === 'error').length;
  return `${first.field}: ${first.message}${count > 1 ? ` (and ${count - 1} more error${count > 2 ? 's' : ''})` : ''}`;
}

function sameOutcome(a: PackRow, b: PackRow): boolean {
  return (
    a.last_action === b.last_action &&
    a.failure_state === b.failure_state &&
    a.failure_reason === b.failure_reason &&
    a.digest === b.digest &&
    JSON.stringify(a.diagnostics) === JSON.stringify(b.diagnostics) &&
    JSON.stringify(a.summary) === JSON.stringify(b.summary)
  );
}

function describeError(error: unknown): string {
  return SvcError.is(error) ? error.message : error instanceof Error ? error.message : String(error);
}
