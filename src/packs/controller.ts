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
import { SvcError } from '../errors';
import type { SessionStore } from '../sessions/session-store';
import { packPolicy, renderPackPrompt, summarize } from './apply';
import { discoverPacks, type ResolvedRef, resolveRef, sourceOf } from './discovery';
import { startHookDispatch } from './hook-dispatch';
import { describeActivePack, listPacks } from './listing';
import { type PackDiagnostic, type ParsedManifest, parseManifestText } from './manifest';
import { buildSnapshot, type OperatingModeState } from './snapshot';
import { createPackStore, emptyRow, type PackRow, type PackStore } from './store';
import type { AppliedPack, PackController, PackControllerDeps } from './types';

export type {
  ActivePackDetails,
  AppliedPack,
  PackController,
  PackControllerDeps,
  PackDiscovery,
  PackListing,
  PresetListing,
} from './types';

const READ_ONLY_REASON =
  'the database is open read-only, so this runtime has no pack-mutation provider: operating packs can be read but not activated or cleared here';

export function createPackController(deps: PackControllerDeps): PackController {
  const store: PackStore = createPackStore(deps.db);
  const applied = new Map<string, AppliedPack>();
  /** Hydration outcomes a read-only process could not persist, by session (same ref_revision only). */
  const overlays = new Map<string, PackRow>();
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

  const discoveryEnv = () => ({
    workspace: deps.workspace,
    env: deps.env,
    pluginPackDirs: deps.pluginPackDirs?.(),
  });

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
      const discovered = row.source === 'workspace' || row.source === 'user' || row.source === 'plugin';
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
  const hooks = startHookDispatch({
    bus: deps.bus,
    workspace: deps.workspace,
    env: deps.env,
    clock: deps.clock,
    log,
    redactor: deps.redactor,
    applied: safeApplied,
    record: (run) => {
      if (!mutationUnavailable()) store.recordHookRun(run);
    },
    spawner: deps.spawner,
  });

  return {
    discover() {
      const env = discoveryEnv();
      const presets = deps.config().options.operating_mode_presets;
      return listPacks(discoverPacks(env), presets, {
        load: (pack) => loadManifest(pack.manifest_path, { expectedName: pack.name }),
        resolves: (id) => resolveRef(id, { ...env, presets }) !== undefined,
      });
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
      return describeActivePack(sessionId, pack, pack ? store.hookRuns(sessionId, 10) : []);
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

    hooksIdle: () => hooks.idle(),

    close: () => hooks.close(),
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
