/**
 * apply_patch's shapes: the result of a patch, a logged failure, the status readout, the service.
 * See ./apply-patch.ts.
 * @module
 */
import type { OpContext } from '../workspace/context';
import type { AppliedHunk } from './patch-apply';
import type { PatchFormat } from './patch-parse';

export interface PatchFileResult {
  path: string;
  change: 'create' | 'modify' | 'delete';
  /** The create side of a move: where the file came from. */
  moved_from?: string;
  /** The delete side of a move: where the file went. */
  moved_to?: string;
  additions: number;
  deletions: number;
  history_id: number;
  /** Where each hunk applied and how loosely it matched (updated files). */
  hunks?: AppliedHunk[];
}

export interface PatchResult {
  mode: 'apply_patch';
  patch_id: number;
  format: PatchFormat;
  files: PatchFileResult[];
  additions: number;
  deletions: number;
  /** Hunks that matched only after ignoring whitespace or normalizing punctuation. */
  fuzzy_hunks: number;
  diff: string;
}

export interface PatchFailure {
  patch_id: number;
  at: number;
  session_id: string | null;
  run_id: string | null;
  format: PatchFormat | 'unknown';
  code: string;
  reason: string;
  path: string | null;
  hunk: number | null;
  message: string;
}

export interface ApplyPatchStatus {
  formats: { format: PatchFormat; description: string; operations: string[] }[];
  entry_point: { tool: 'edit'; mode: 'apply_patch'; field: 'patch' };
  matching: { levels: readonly string[]; order: string };
  atomic: true;
  counts: {
    total: number;
    applied: number;
    failed: number;
    files_changed: number;
    fuzzy_hunks: number;
    by_format: Record<PatchFormat | 'unknown', { applied: number; failed: number }>;
    failed_by_reason: Record<string, number>;
  };
  last_applied_at: number | null;
  last_failed_at: number | null;
  recent_failures: PatchFailure[];
}

export interface PatchService {
  apply(input: { patch: string; path?: string }, ctx: OpContext): Promise<PatchResult>;
  status(options?: { limit?: number; sessionId?: string }): Promise<ApplyPatchStatus>;
}
