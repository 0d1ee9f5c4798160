/**
 * Hydration: re-applying in this process a pack reference persisted by another process or before
 * a restart, and the lookups that make sure this process applies what a session references.
 * @module
 */
import { basename, dirname } from 'node:path';
import { summarize } from './apply';
import { stillApproved } from './approval';
import type { ParsedManifest } from './manifest';
import { describeError, firstError, type PackCore, sameOutcome } from './pack-core';
import type { PackRow } from './store';
import type { AppliedPack } from './types';

/** Re-apply a persisted reference in this process; records `last_action` hydrate. */
export async function hydrate(core: PackCore, row: PackRow): Promise<PackRow> {
  const { applied, log } = core;
  let parsed: ParsedManifest;
  const presets = core.deps.config().options.operating_mode_presets;
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
    parsed = core.loadManifest(row.manifest_path, {
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
      await core.save({ ...next, updated_at: core.now() });
      log.warn('pack hydration failed', { session_id: row.session_id, pack: row.pack_name });
    }
    return (await core.readRow(row.session_id)) ?? next;
  }
  const manifest = parsed.manifest;
  const overrides = preset ? (preset.overrides ?? {}) : undefined;
  const approval = core.approvalOf(manifest, parsed.digest, row.manifest_path, overrides);
  if (!stillApproved(row.digest, { approval: approval.digest, text: parsed.digest })) {
    return await needsApproval(core, row);
  }
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
    summary: summarize(manifest),
    last_action: 'hydrate',
    failure_state: keepValidation ? row.failure_state : '',
    failure_reason: keepValidation ? row.failure_reason : '',
    diagnostics: keepValidation ? row.diagnostics : parsed.diagnostics,
  };
  if (!sameOutcome(row, next)) await core.save({ ...next, updated_at: core.now() });
  log.info('pack hydrated', { session_id: row.session_id, pack: manifest.name });
  return (await core.readRow(row.session_id)) ?? next;
}

/**
 * The manifest, the preset's overrides or a file the hooks run changed since the pack was
 * approved: nothing of it applies until someone activates it again (and sees the new version).
 */
async function needsApproval(core: PackCore, row: PackRow): Promise<PackRow> {
  core.applied.delete(row.session_id);
  const again = row.preset_id || row.requested || row.pack_name;
  const reason = `pack "${row.pack_name}" changed since it was approved (${row.manifest_path}, its preset's overrides or a file its hooks run), so it is not applied; review and approve it again with session_set_pack pack_path_or_name="${again}" (TUI: /pack), or clear it with session_clear_pack`;
  const next: PackRow = {
    ...row,
    last_action: 'hydrate',
    failure_state: 'approval_required',
    failure_reason: reason,
    diagnostics: [
      {
        section: 'pack',
        field: 'digest',
        level: 'error',
        message: 'the pack changed since it was approved; activate it again to review and approve it',
      },
    ],
  };
  if (!sameOutcome(row, next)) {
    await core.save({ ...next, updated_at: core.now() });
    core.log.warn('pack changed since approval: not applied', {
      session_id: row.session_id,
      pack: row.pack_name,
    });
  }
  return (await core.readRow(row.session_id)) ?? next;
}

/** The row after making sure this process applies what it references. */
export async function ensureApplied(core: PackCore, row: PackRow): Promise<PackRow> {
  if (!row.active) {
    core.applied.delete(row.session_id);
    return row;
  }
  const current = core.applied.get(row.session_id);
  const failed = row.failure_state === 'hydration_failed' || row.failure_state === 'approval_required';
  if (current && current.ref_revision === row.ref_revision && !failed) {
    return row;
  }
  return await hydrate(core, row);
}

export async function appliedFor(core: PackCore, sessionId: string): Promise<AppliedPack | undefined> {
  if (!core.enabled()) return undefined;
  const row = await core.readRow(sessionId);
  if (!row) {
    core.applied.delete(sessionId);
    return undefined;
  }
  await ensureApplied(core, row);
  return core.applied.get(sessionId);
}

/** For the prompt, funnel and hook paths: a storage problem is logged, and no pack applies. */
export function safeAppliedLookup(core: PackCore): (sessionId: string) => Promise<AppliedPack | undefined> {
  const warned = new Map<string, string>();
  return async (sessionId) => {
    try {
      const pack = await appliedFor(core, sessionId);
      warned.delete(sessionId);
      return pack;
    } catch (error) {
      // Logged once per session and cause: the funnel asks on every turn.
      const message = describeError(error);
      if (warned.get(sessionId) !== message) {
        warned.set(sessionId, message);
        core.log.warn('operating pack not applied', { session_id: sessionId, error: message });
      }
      return undefined;
    }
  };
}
