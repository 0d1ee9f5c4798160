/**
 * The metadata views of packs: the discovery listing (`session_list_packs`) and the description
 * of the pack in force (`session_get_active_pack`). Names, counts, events and outcomes only:
 * never the preamble, hook commands or rule bodies.
 * @module
 */
import type { Config } from '../config/schema';
import { policyMode } from './apply';
import type { DiscoveredPack } from './discovery';
import type { ParsedManifest } from './manifest';
import type { HookRun } from './store';
import type { ActivePackDetails, AppliedPack, PackDiscovery } from './types';

export function listPacks(
  discovered: DiscoveredPack[],
  presets: Config['options']['operating_mode_presets'],
  io: { load(pack: DiscoveredPack): ParsedManifest; resolves(presetId: string): boolean },
): PackDiscovery {
  return {
    packs: discovered.map((pack) => {
      const parsed = io.load(pack);
      return {
        name: pack.name,
        description: parsed.manifest?.description ?? '',
        source: pack.source,
        manifest_path: pack.manifest_path,
        valid: parsed.manifest !== undefined,
        errors: parsed.diagnostics.filter((d) => d.level === 'error').length,
        warnings: parsed.diagnostics.filter((d) => d.level === 'warning').length,
      };
    }),
    presets: Object.entries(presets)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, preset]) => ({
        id,
        pack: preset.pack,
        description: preset.description ?? '',
        resolves: io.resolves(id),
      })),
  };
}

export function describeActivePack(
  sessionId: string,
  pack: AppliedPack | undefined,
  runs: HookRun[],
): ActivePackDetails {
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
}
