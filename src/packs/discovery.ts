/**
 * Where packs live and how a reference names one. A pack is `<root>/<name>/pack.toml` under the
 * workspace (`.svc/packs`) or the user config dir (`<config dir>/svc/packs`); a workspace pack
 * shadows a user pack of the same name. A reference is, in this order: a preset id from
 * `options.operating_mode_presets`, a path (anything with a slash, or ending in `.toml`), or a
 * pack name.
 * @module
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { globalConfigDir } from '../config/load';
import type { Config } from '../config/schema';

export const MANIFEST_FILE = 'pack.toml';

export type PackSource = 'workspace' | 'user' | 'plugin' | 'path';

export interface DiscoveredPack {
  name: string;
  manifest_path: string;
  source: Exclude<PackSource, 'path'>;
}

export interface PackRoot {
  source: Exclude<PackSource, 'path'>;
  dir: string;
}

export type PackRef =
  | { kind: 'name'; manifest_path: string; source: PackSource; expected_name: string }
  | { kind: 'path'; manifest_path: string; source: PackSource };

export interface ResolvedRef {
  /** What was asked for, exactly as sent. */
  requested: string;
  /** Set when the reference was a preset id. */
  preset_id: string;
  overrides?: Record<string, unknown>;
  target: PackRef;
}

export interface DiscoveryEnv {
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Pack directories of installed plugins (`app.plugins.packDirs()`), searched after the others. */
  pluginPackDirs?: readonly string[];
}

export function packRoots(input: DiscoveryEnv): PackRoot[] {
  return [
    { source: 'workspace', dir: join(input.workspace, '.svc', 'packs') },
    { source: 'user', dir: join(globalConfigDir(input.env as Record<string, string | undefined>), 'packs') },
    ...(input.pluginPackDirs ?? []).map((dir) => ({ source: 'plugin' as const, dir })),
  ];
}

/** Every pack directory with a manifest, workspace first; a name appears once (workspace wins). */
export function discoverPacks(input: DiscoveryEnv): DiscoveredPack[] {
  const seen = new Set<string>();
  const found: DiscoveredPack[] = [];
  for (const root of packRoots(input)) {
    let entries: string[];
    try {
      entries = readdirSync(root.dir).sort();
    } catch {
      continue; // no packs folder: nothing to discover here
    }
    for (const name of entries) {
      if (seen.has(name) || name.startsWith('.')) continue;
      const manifest = join(root.dir, name, MANIFEST_FILE);
      if (!isFile(manifest)) continue;
      seen.add(name);
      found.push({ name, manifest_path: manifest, source: root.source });
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

export function looksLikePath(ref: string): boolean {
  return ref.includes('/') || ref.includes('\\') || ref.endsWith('.toml') || ref.startsWith('.');
}

/** Resolve a reference; undefined when nothing matches (the caller reports it as a diagnostic). */
export function resolveRef(
  ref: string,
  input: DiscoveryEnv & { presets: Config['options']['operating_mode_presets'] },
): ResolvedRef | undefined {
  const preset = Object.hasOwn(input.presets, ref) ? input.presets[ref] : undefined;
  if (preset) {
    // A preset points at a pack by name or path, never at another preset.
    const target = resolveTarget(preset.pack, input);
    return target ? { requested: ref, preset_id: ref, overrides: preset.overrides ?? {}, target } : undefined;
  }
  const target = resolveTarget(ref, input);
  return target ? { requested: ref, preset_id: '', target } : undefined;
}

function resolveTarget(ref: string, input: DiscoveryEnv): PackRef | undefined {
  if (looksLikePath(ref)) {
    const full = isAbsolute(ref) ? ref : resolve(input.workspace, ref);
    const manifest = isDirectory(full) ? join(full, MANIFEST_FILE) : full;
    return isFile(manifest)
      ? { kind: 'path', manifest_path: manifest, source: sourceOf(manifest, input) }
      : undefined;
  }
  const pack = discoverPacks(input).find((p) => p.name === ref);
  return pack
    ? { kind: 'name', manifest_path: pack.manifest_path, source: pack.source, expected_name: pack.name }
    : undefined;
}

/** A path inside one of the pack roots counts as that root's pack. */
export function sourceOf(manifestPath: string, input: DiscoveryEnv): PackSource {
  const dir = dirname(dirname(manifestPath));
  const root = packRoots(input).find((r) => resolve(r.dir) === resolve(dir));
  return root && basename(manifestPath) === MANIFEST_FILE ? root.source : 'path';
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}
