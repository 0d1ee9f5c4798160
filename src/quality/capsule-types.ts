/**
 * Edit capsules' shapes: a capsule, its files, the revert result, the status readout, the service.
 * See ./capsules.ts.
 * @module
 */
import type { OpContext } from '../workspace/context';
import type { BeforeWriteHook } from '../workspace/file-changes';

export type CapsuleStatus = 'recording' | 'open' | 'reverted';

export interface EditCapsuleFile {
  path: string;
  change: 'create' | 'modify' | 'delete';
  /** Net line stats of the run's change to this file; null when its content was not stored. */
  additions: number | null;
  deletions: number | null;
  /** File history rows of the run for this path. */
  edits: number;
  tools: string[];
  first_history_id: number;
  last_history_id: number;
  /** Before and after content are in the file history (text up to 1 MiB): revert can restore it. */
  revertible: boolean;
}

export interface EditCapsule {
  id: string;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  status: CapsuleStatus;
  /** How the run ended (null while recording). */
  run_status: string | null;
  /** Checkpoint of the workspace taken before the run's first change (`checkpoint_restore`). */
  checkpoint_id: string | null;
  /** Why there is no checkpoint, when there is none. */
  checkpoint_note: string | null;
  files: EditCapsuleFile[];
  file_count: number;
  additions: number;
  deletions: number;
  created_at: number;
  closed_at: number | null;
  reverted_at: number | null;
  reverted_by_session_id: string | null;
  revert_history_ids: number[];
}

export interface CapsuleDetail extends EditCapsule {
  diff: string;
  restore_hint: string;
}

export interface RevertResult {
  capsule: EditCapsule;
  files: {
    path: string;
    change: 'create' | 'modify' | 'delete';
    additions: number;
    deletions: number;
    history_id: number;
  }[];
  diff: string;
}

export interface EditCapsulesStatus {
  enabled: boolean;
  option: 'options.edit_capsules';
  counts: {
    total: number;
    recording: number;
    open: number;
    reverted: number;
    with_checkpoint: number;
    files: number;
    additions: number;
    deletions: number;
  };
  last_capsule_at: number | null;
  recent: EditCapsule[];
}

export interface CapsuleService {
  enabled(): boolean;
  /** The checkpoint-before-first-change hook (registered on the change committer). */
  readonly beforeWrite: BeforeWriteHook;
  /** Fold a finished run's changes into its capsule (called on `run.finished`). */
  finalize(run: { sessionId: string; runId: string; status: string }): Promise<EditCapsule | undefined>;
  /**
   * A run's end has nothing to finalize, answered at once where the store can (SQLite): capsules
   * off and none recording (a run's own, or one a crashed run left).
   */
  nothingToFinalize(): boolean;
  list(filter?: { sessionId?: string; status?: CapsuleStatus; limit?: number }): Promise<EditCapsule[]>;
  get(id: string): Promise<EditCapsule>;
  show(id: string): Promise<CapsuleDetail>;
  revert(id: string, ctx: OpContext): Promise<RevertResult>;
  status(options?: { limit?: number; sessionId?: string }): Promise<EditCapsulesStatus>;
}
