/**
 * The pack controller's shared state: the persisted rows (and this process's read-only overlays),
 * the packs applied in this process, loading manifests, and the small helpers the controller's
 * parts share (./controller.ts, ./pack-hydration.ts, ./pack-operations.ts).
 * @module
 */
import { dirname } from 'node:path';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import { NotRegularFileError, readRegularFile } from '../workspace/file-io';
import { approvalDigest, type HookFile, hookFiles } from './approval';
import type { ResolvedRef } from './discovery';
import {
  MAX_MANIFEST_BYTES,
  type PackDiagnostic,
  type PackManifest,
  type ParsedManifest,
  parseManifestText,
} from './manifest';
import type { PackRow, PackStore } from './store';
import type { AppliedPack, PackControllerDeps } from './types';

const READ_ONLY_REASON =
  'the database is open read-only, so this runtime has no pack-mutation provider: operating packs can be read but not activated or cleared here';

export interface ManifestLoadOptions {
  expectedName?: string;
  overrides?: Record<string, unknown>;
  presetId?: string;
}

export interface PackCore {
  deps: PackControllerDeps;
  store: PackStore;
  /** Packs in force in this process, by session. */
  applied: Map<string, AppliedPack>;
  log: Logger;
  enabled(): boolean;
  now(): number;
  requireEnabled(): void;
  /** Why this process cannot persist pack changes, if it cannot. */
  mutationUnavailable(): string | undefined;
  requireMutations(): void;
  /** The persisted row, or this process's overlay of it (same ref_revision only). */
  readRow(sessionId: string): Promise<PackRow | undefined>;
  /** Persist a row; a read-only process keeps it as this process's overlay instead. */
  save(row: PackRow): Promise<void>;
  loadManifest(manifestPath: string, options: ManifestLoadOptions): ParsedManifest;
  loadResolved(resolved: ResolvedRef): ParsedManifest;
  /** The approval digest of a valid manifest (./approval.ts), and the hook files it pins. */
  approvalOf(
    manifest: PackManifest,
    textDigest: string,
    manifestPath: string,
    overrides: Record<string, unknown> | undefined,
  ): { digest: string; files: HookFile[] };
  discoveryEnv(): {
    workspace: string;
    env: Readonly<Record<string, string | undefined>>;
    pluginPackDirs?: readonly string[];
  };
}

export function createPackCore(deps: PackControllerDeps): PackCore {
  const store = deps.store;
  /** Hydration outcomes a read-only process could not persist, by session (same ref_revision only). */
  const overlays = new Map<string, PackRow>();
  const enabled = () => deps.config().options.operating_packs === true;

  const mutationUnavailable = (): string | undefined => {
    return store.readOnly() ? READ_ONLY_REASON : undefined;
  };

  const loadManifest = (manifestPath: string, options: ManifestLoadOptions): ParsedManifest => {
    let text: string;
    try {
      // Non-blocking, checked on the opened file and no more than the limit (+1 to tell it is over):
      // a FIFO put where the manifest was found waits for a writer, and svc's process with it.
      text = readRegularFile(manifestPath, MAX_MANIFEST_BYTES + 1).toString('utf8');
    } catch (error) {
      const code =
        error instanceof NotRegularFileError
          ? `it is a ${error.kind}, not a regular file`
          : ((error as NodeJS.ErrnoException).code ?? 'error');
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

  return {
    deps,
    store,
    applied: new Map(),
    log: deps.log.child({ component: 'packs' }),
    enabled,
    now: () => deps.clock.now(),
    requireEnabled() {
      if (!enabled()) {
        throw new SvcError(
          'not_found',
          'operating packs are disabled: set options.operating_packs = true to use them',
        );
      }
    },
    mutationUnavailable,
    requireMutations() {
      const reason = mutationUnavailable();
      if (reason) throw new SvcError('unavailable', reason);
    },
    async readRow(sessionId) {
      const row = await store.get(sessionId);
      const overlay = overlays.get(sessionId);
      if (overlay && row && overlay.ref_revision === row.ref_revision) return overlay;
      return row;
    },
    async save(row) {
      if (mutationUnavailable()) {
        overlays.set(row.session_id, row);
        return;
      }
      overlays.delete(row.session_id);
      await store.put(row);
    },
    loadManifest,
    loadResolved: (resolved) =>
      loadManifest(resolved.target.manifest_path, {
        expectedName: resolved.target.kind === 'name' ? resolved.target.expected_name : undefined,
        overrides: resolved.preset_id ? resolved.overrides : undefined,
        presetId: resolved.preset_id || undefined,
      }),
    approvalOf(manifest, textDigest, manifestPath, overrides) {
      const files = hookFiles(manifest, deps.workspace, dirname(manifestPath));
      return { digest: approvalDigest(textDigest, overrides, files), files };
    },
    discoveryEnv: () => ({
      workspace: deps.workspace,
      env: deps.env,
      pluginPackDirs: deps.pluginPackDirs?.(),
    }),
  };
}

export function mutationDiagnostic(reason: string): PackDiagnostic {
  return { section: 'persistence', field: 'mutation_provider', level: 'warning', message: reason };
}

export function firstError(diagnostics: PackDiagnostic[]): string {
  const first = diagnostics.find((d) => d.level === 'error') ?? diagnostics[0];
  if (!first) return 'invalid';
  const count = diagnostics.filter((d) => d.level === 'error').length;
  return `${first.field}: ${first.message}${count > 1 ? ` (and ${count - 1} more error${count > 2 ? 's' : ''})` : ''}`;
}

export function sameOutcome(a: PackRow, b: PackRow): boolean {
  return (
    a.last_action === b.last_action &&
    a.failure_state === b.failure_state &&
    a.failure_reason === b.failure_reason &&
    a.digest === b.digest &&
    JSON.stringify(a.diagnostics) === JSON.stringify(b.diagnostics) &&
    JSON.stringify(a.summary) === JSON.stringify(b.summary)
  );
}

export function describeError(error: unknown): string {
  return SvcError.is(error) ? error.message : error instanceof Error ? error.message : String(error);
}
