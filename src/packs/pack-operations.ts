/**
 * The pack controller's larger operations: the operating-mode snapshot (and its posture form)
 * and activating a pack for a session (its approval preview first).
 * @module
 */
import { SvcError } from '../errors';
import type { SessionStore } from '../sessions/session-store';
import { summarize } from './apply';
import { approvalDetails } from './approval';
import { type ResolvedRef, resolveRef, sourceOf } from './discovery';
import type { PackDiagnostic } from './manifest';
import { describeError, firstError, mutationDiagnostic, type PackCore } from './pack-core';
import { ensureApplied } from './pack-hydration';
import { buildSnapshot, type OperatingModeSnapshot, type OperatingModeState } from './snapshot';
import { emptyRow, type PackRow } from './store';
import type { PackPreview } from './types';

export async function packSnapshot(
  core: PackCore,
  sessionId: string | undefined,
  options: { posture?: boolean },
): Promise<OperatingModeSnapshot> {
  const posture = options.posture === true;
  const id = sessionId ?? '';
  const base = { session_id: id, enabled: core.enabled() };
  if (!base.enabled) {
    if (!posture) core.requireEnabled();
    return buildSnapshot(
      {
        ...base,
        state: 'disabled',
        reason: 'options.operating_packs is false; set it to true to use operating packs',
        evidence_at: core.now(),
      },
      core.deps.redactor,
    );
  }
  if (!sessionId) {
    if (!posture) {
      throw new SvcError('invalid_input', 'session_id: required (no current session to default to)');
    }
    return buildSnapshot({ ...base, ...postureState(core), evidence_at: core.now() }, core.deps.redactor);
  }
  let session: Awaited<ReturnType<SessionStore['get']>>;
  let row: PackRow | undefined;
  try {
    session = posture && !core.deps.dbPresent() ? undefined : await core.deps.sessions.get(sessionId);
  } catch (error) {
    return buildSnapshot(
      { ...base, state: 'persistence_unavailable', reason: describeError(error), evidence_at: core.now() },
      core.deps.redactor,
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
        evidence_at: core.now(),
      },
      core.deps.redactor,
    );
  }
  try {
    row = await core.readRow(sessionId);
    if (row && !posture) row = await ensureApplied(core, row);
  } catch (error) {
    // A row that exists but cannot be decoded is a serialization failure, not a storage outage.
    if (SvcError.is(error) && error.details?.reason === 'serialization') throw error;
    return buildSnapshot(
      { ...base, state: 'persistence_unavailable', reason: describeError(error), evidence_at: core.now() },
      core.deps.redactor,
    );
  }
  const readOnly = core.mutationUnavailable();
  let state: OperatingModeState;
  let diagnostics = row?.diagnostics ?? [];
  if (row?.failure_state) state = row.failure_state;
  else if (readOnly) {
    state = 'mutation_unavailable';
    diagnostics = [...diagnostics, mutationDiagnostic(readOnly)];
  } else state = row?.active ? 'active' : 'enabled_inactive';
  return buildSnapshot(
    { ...base, state, row, diagnostics, evidence_at: row?.updated_at ?? session.created_at },
    core.deps.redactor,
  );
}

/**
 * What activating `ref` would apply, for the approval ask: the pack's details and the digest to
 * hand to `activatePack`. undefined when the reference does not resolve to a valid manifest
 * (activation then fails and applies nothing). Records nothing.
 */
export async function previewPack(
  core: PackCore,
  sessionId: string,
  ref: string,
): Promise<PackPreview | undefined> {
  core.requireEnabled();
  await core.deps.sessions.require(sessionId);
  const presets = core.deps.config().options.operating_mode_presets;
  const resolved = resolveRef(ref, { ...core.discoveryEnv(), presets });
  if (!resolved) return undefined;
  const parsed = core.loadResolved(resolved);
  if (!parsed.manifest) return undefined;
  const path = resolved.target.manifest_path;
  const approval = core.approvalOf(parsed.manifest, parsed.digest, path, overridesOf(resolved));
  return {
    pack_name: parsed.manifest.name,
    digest: approval.digest,
    details: approvalDetails(parsed.manifest, {
      manifest_path: path,
      preset_id: resolved.preset_id,
      files: approval.files,
    }),
  };
}

/**
 * Activate a pack. With `approved` (the digest of the preview the user approved), a pack whose
 * manifest or hook files changed since that preview is refused: what was approved is what applies.
 */
export async function activatePack(
  core: PackCore,
  sessionId: string,
  ref: string,
  approved?: { digest: string },
): Promise<{ status: 'activated'; session_id: string; pack_name: string }> {
  core.requireEnabled();
  await core.deps.sessions.require(sessionId);
  core.requireMutations();
  const current = (await core.readRow(sessionId)) ?? emptyRow(sessionId, core.now());
  const presets = core.deps.config().options.operating_mode_presets;
  const resolved = resolveRef(ref, { ...core.discoveryEnv(), presets });
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
    return await fail(
      core,
      current,
      ref,
      diagnostics,
      `no preset, pack or manifest matches "${ref}"; see session_list_packs`,
    );
  }
  const parsed = core.loadResolved(resolved);
  if (!parsed.manifest) {
    return await fail(
      core,
      current,
      ref,
      parsed.diagnostics,
      `pack "${ref}" failed validation: ${firstError(parsed.diagnostics)}`,
    );
  }
  const manifest = parsed.manifest;
  const path = resolved.target.manifest_path;
  const approval = core.approvalOf(manifest, parsed.digest, path, overridesOf(resolved));
  if (approved && approved.digest !== approval.digest) {
    throw new SvcError(
      'conflict',
      `pack "${manifest.name}" changed while its activation was awaiting approval (${path} or a file its hooks run); nothing was applied: activate it again to review the new version`,
      { details: { requested: ref } },
    );
  }
  const row: PackRow = {
    session_id: sessionId,
    active: true,
    pack_name: manifest.name,
    requested: ref,
    manifest_path: resolved.target.manifest_path,
    source: sourceOf(resolved.target.manifest_path, core.discoveryEnv()),
    preset_id: resolved.preset_id,
    // What was approved: the hydration of another process applies the pack only while it matches.
    digest: approval.digest,
    summary: summarize(manifest),
    ref_revision: current.ref_revision + 1,
    last_action: 'activate',
    failure_state: '',
    failure_reason: '',
    diagnostics: parsed.diagnostics,
    updated_at: core.now(),
  };
  await core.save(row);
  core.applied.set(sessionId, {
    session_id: sessionId,
    ref_revision: row.ref_revision,
    manifest,
    manifest_path: row.manifest_path,
    source: row.source,
    preset_id: row.preset_id,
  });
  core.log.info('pack activated', { session_id: sessionId, pack: manifest.name, preset: row.preset_id });
  return { status: 'activated', session_id: sessionId, pack_name: ref };
}

function overridesOf(resolved: ResolvedRef): Record<string, unknown> | undefined {
  return resolved.preset_id ? resolved.overrides : undefined;
}

async function fail(
  core: PackCore,
  current: PackRow,
  requested: string,
  diagnostics: PackDiagnostic[],
  reason: string,
): Promise<never> {
  await core.save({
    ...current,
    last_action: 'activate',
    failure_state: 'validation_failed',
    failure_reason: reason,
    diagnostics,
    updated_at: core.now(),
  });
  core.log.info('pack activation failed', { session_id: current.session_id, errors: diagnostics.length });
  throw new SvcError('invalid_input', `pack_path_or_name: ${reason}`, {
    details: { requested, diagnostics },
  });
}

function postureState(core: PackCore): {
  state: OperatingModeState;
  reason?: string;
  diagnostics?: PackDiagnostic[];
} {
  if (!core.deps.dbPresent()) return { state: 'enabled_inactive' };
  try {
    const reason = core.mutationUnavailable();
    return reason
      ? { state: 'mutation_unavailable', diagnostics: [mutationDiagnostic(reason)] }
      : { state: 'enabled_inactive' };
  } catch (error) {
    return { state: 'persistence_unavailable', reason: describeError(error) };
  }
}
