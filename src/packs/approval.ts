/**
 * What a person approves when a pack is activated, and the digest that pins it.
 *
 * - `approvalDetails`: the activation ask's view of what the pack will run and change: each hook
 *   (event, tool filter, timeout and its command line), the files those commands run that svc
 *   found, the policy rules (a pack only narrows the tool set: it adds no permission, no command
 *   and no MCP server), skills, task rules and the preamble. Every string from the manifest is
 *   `printable` (../util/terminal-text.ts): a manifest cannot hide a command behind terminal
 *   escapes or a line break. `command` holds the hook commands as one text, as the plugin install
 *   ask does (the TUI's permission dialog shows it whole).
 * - `approvalDigest`: the manifest text, the preset's overrides and the files the hooks run, as
 *   one digest recorded at activation. A process that hydrates the reference later applies the
 *   pack only when the digest still matches (./pack-hydration.ts).
 * @module
 */
import { createHash } from 'node:crypto';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { printable } from '../util/terminal-text';
import { readRegularFile } from '../workspace/file-io';
import type { PackManifest } from './manifest';

/** A file a hook command names (a script it runs), with the digest of its content. */
export interface HookFile {
  path: string;
  sha256: string;
}

/** Files larger than this are not hashed (a hook runs scripts, not data sets). */
const MAX_HASHED_BYTES = 8 * 1024 * 1024;
/** The digest scheme this module records; a row without it holds the manifest text's digest only. */
const SCHEME = 'a1:';

/**
 * The files the hook commands name, found as svc runs them (relative to the workspace, the
 * hooks' working directory): each word of a command with a `/` in it that is a regular file in
 * the workspace or the pack's own directory (a system program such as /usr/bin/python3 is not
 * pinned: an upgrade would ask for approval again).
 */
export function hookFiles(manifest: PackManifest, workspace: string, packDir: string): HookFile[] {
  const found = new Map<string, string>();
  for (const hook of manifest.hooks) {
    for (const word of words(hook.command)) {
      if (!word.includes('/') || word.includes('$') || /^[a-z][a-z0-9+.-]*:\/\//i.test(word)) continue;
      const abs = resolve(workspace, word);
      if (found.has(abs) || !(within(workspace, abs) || within(packDir, abs))) continue;
      const sha = fileDigest(abs);
      if (sha) found.set(abs, sha);
    }
  }
  return [...found.entries()]
    .map(([abs, sha256]) => ({ path: shown(workspace, abs), sha256 }))
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** The digest recorded at activation (see the module). */
export function approvalDigest(
  textDigest: string,
  overrides: Record<string, unknown> | undefined,
  files: readonly HookFile[],
): string {
  const pinned = stableJson({ manifest: textDigest, overrides: overrides ?? null, files });
  return `${SCHEME}${createHash('sha256').update(pinned).digest('hex').slice(0, 32)}`;
}

/**
 * Whether what is on disk now is what was approved. A row recorded before approval digests
 * existed holds the manifest text's digest: that much is compared.
 */
export function stillApproved(recorded: string, now: { approval: string; text: string }): boolean {
  if (!recorded) return false;
  return recorded.startsWith(SCHEME) ? recorded === now.approval : recorded === now.text;
}

export type ApprovalDetails = ReturnType<typeof approvalDetails>;

/** The activation ask's details (see the module). */
export function approvalDetails(
  manifest: PackManifest,
  where: { manifest_path: string; preset_id: string; files: readonly HookFile[] },
) {
  const hooks = manifest.hooks.map((hook) => ({
    event: hook.event,
    ...(hook.tool !== undefined ? { tool: printable(hook.tool) } : {}),
    timeout_seconds: hook.timeout_seconds,
    command: printable(hook.command),
  }));
  const lines = hooks.map((h) => `hook ${h.event}${h.tool ? ` (tool ${h.tool})` : ''}: ${h.command}`);
  const first = manifest.preamble.trim().split('\n')[0] ?? '';
  return {
    pack: printable(manifest.name),
    ...(manifest.description ? { description: printable(manifest.description, 200) } : {}),
    manifest_path: printable(where.manifest_path),
    ...(where.preset_id ? { preset_id: printable(where.preset_id) } : {}),
    ...(lines.length ? { command: lines.join('\n') } : {}),
    hooks,
    hook_files: where.files.map((f) => ({ path: printable(f.path), sha256: f.sha256 })),
    // A pack's policy only narrows the tool set; it grants nothing.
    policy: manifest.policy.map((rule) => `${rule.effect} ${printable(rule.tool)}`),
    adds: 'no permissions, commands or MCP servers: only the hooks above run',
    skills: manifest.skills.map((s) => printable(s)),
    task_rules: manifest.task_rules.map((r) => printable(r.name)),
    preamble_chars: manifest.preamble.length,
    ...(first ? { preamble_first_line: printable(first, 200) } : {}),
    ...(manifest.choreography ? { choreography: manifest.choreography } : {}),
  };
}

/** A shell command's words, quotes taken off (a rough split: enough to find the scripts it names). */
function words(command: string): string[] {
  return command
    .split(/[\s;|&()<>`]+/)
    .map((w) => w.replace(/^['"]+|['"]+$/g, ''))
    .filter((w) => w !== '' && !w.startsWith('-'));
}

/**
 * The digest of a regular file of at most `MAX_HASHED_BYTES`, else undefined. Checked on the opened
 * file, not by a stat before the read: the workspace's commands can put a FIFO (a read of it waits
 * for a writer, and svc's process with it) or a huge file in its place between the two.
 */
function fileDigest(abs: string): string | undefined {
  try {
    const buffer = readRegularFile(abs, MAX_HASHED_BYTES + 1);
    if (buffer.length > MAX_HASHED_BYTES) return undefined;
    return createHash('sha256').update(buffer).digest('hex').slice(0, 32);
  } catch {
    return undefined;
  }
}

function within(dir: string, abs: string): boolean {
  const rel = relative(dir, abs);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

function shown(workspace: string, abs: string): string {
  return within(workspace, abs) ? relative(workspace, abs).split(sep).join('/') : abs;
}

/** JSON with object keys sorted: the same overrides give the same digest whatever their order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
