/**
 * The session pack controller: the one service behind `get_operating_mode`, `session_set_pack`,
 * `session_clear_pack`, `session_list_packs`, `session_get_active_pack`, the
 * `/v1/session-operating-mode` routes, `svc config show-operating-mode`, the MCP tool and the
 * TUI `/pack` picker. It persists each session's pack reference, applies the pack in this process
 * (prompt section, funnel policy, hooks on bus events) and hydrates a reference persisted by
 * another process or before a restart. State transitions: docs/operating-mode.md.
 * @module
 */
import { packPolicy, renderPackPrompt } from './apply';
import { discoverPacks, resolveRef } from './discovery';
import { startHookDispatch } from './hook-dispatch';
import { describeActivePack, listPacks } from './listing';
import { createPackCore } from './pack-core';
import { appliedFor, safeAppliedLookup } from './pack-hydration';
import { activatePack, packSnapshot, previewPack } from './pack-operations';
import { emptyRow } from './store';
import type { PackController, PackControllerDeps } from './types';

export type {
  ActivePackDetails,
  AppliedPack,
  PackController,
  PackControllerDeps,
  PackDiscovery,
  PackListing,
  PresetListing,
} from './types';

export function createPackController(deps: PackControllerDeps): PackController {
  const core = createPackCore(deps);
  const { store, applied, log } = core;
  const safeApplied = safeAppliedLookup(core);

  // Hooks: one subscription; each session's hooks run in event order, off the publisher's path.
  const hooks = startHookDispatch({
    bus: deps.bus,
    workspace: deps.workspace,
    env: deps.env,
    clock: deps.clock,
    log,
    redactor: deps.redactor,
    applied: safeApplied,
    enabled: core.enabled,
    record: async (run) => {
      if (!core.mutationUnavailable()) await store.recordHookRun(run);
    },
    spawner: deps.spawner,
  });

  return {
    discover() {
      const env = core.discoveryEnv();
      const presets = deps.config().options.operating_mode_presets;
      return listPacks(discoverPacks(env), presets, {
        load: (pack) => core.loadManifest(pack.manifest_path, { expectedName: pack.name }),
        resolves: (id) => resolveRef(id, { ...env, presets }) !== undefined,
      });
    },

    snapshot: async (sessionId, options = {}) => await packSnapshot(core, sessionId, options),

    mutationUnavailable: core.mutationUnavailable,

    preview: async (sessionId, ref) => await previewPack(core, sessionId, ref),

    activate: async (sessionId, ref, approved) => await activatePack(core, sessionId, ref, approved),

    async clear(sessionId) {
      core.requireEnabled();
      await deps.sessions.require(sessionId);
      core.requireMutations();
      const current = await core.readRow(sessionId);
      await core.save({
        ...emptyRow(sessionId, core.now()),
        ref_revision: (current?.ref_revision ?? 0) + 1,
        last_action: 'clear',
      });
      applied.delete(sessionId);
      log.info('pack cleared', { session_id: sessionId });
      return { status: 'cleared', session_id: sessionId };
    },

    async activePack(sessionId) {
      core.requireEnabled();
      await deps.sessions.require(sessionId);
      const pack = await appliedFor(core, sessionId);
      return describeActivePack(sessionId, pack, pack ? await store.hookRuns(sessionId, 10) : []);
    },

    applied: async (sessionId) => await appliedFor(core, sessionId),

    // Packs off (the default), no pack applies: answered at once, no lookup and no promise (a
    // run's prompt and every step's funnel ask). Nor for a run's start whose statement inserted
    // its session (`start.inserted`): a pack's row references its session, so none was committed
    // before that statement, which started the run (the pack in force at the run's start is none,
    // on any node; a lone compat start on PostgreSQL stays one statement, p-packstart).
    promptSection(sessionId, start) {
      if (!core.enabled() || start?.inserted) return undefined;
      return safeApplied(sessionId).then((pack) => {
        const text = pack ? renderPackPrompt(pack.manifest) : undefined;
        return pack && text ? { source: `pack ${pack.manifest.name}`, text } : undefined;
      });
    },

    policies(sessionId, start) {
      if (!sessionId || !core.enabled() || start?.inserted) return [];
      return safeApplied(sessionId).then((pack) => {
        const policy = pack ? packPolicy(pack.manifest) : undefined;
        return policy ? [policy] : [];
      });
    },

    async choreography(sessionId) {
      return (await safeApplied(sessionId))?.manifest.choreography || undefined;
    },

    hooksIdle: () => hooks.idle(),

    close: () => hooks.close(),
  };
}
