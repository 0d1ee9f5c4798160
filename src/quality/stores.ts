/**
 * The quality services' repositories that are async (issue 18), handed to `createQuality` so the
 * app picks the backend: SQLite (the default) or the PostgreSQL twins.
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DB_FILE, type Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { type CapsuleRepository, createCapsuleRepository } from './capsule-repository';
import { createFindingRepository, type FindingRepository } from './finding-repository';
import { createPatchLogRepository, type PatchLogRepository } from './patch-log-repository';
import { createPostgresCapsuleRepository } from './pg-capsule-repository';
import { createPostgresFindingRepository } from './pg-finding-repository';
import { createPostgresPatchLogRepository } from './pg-patch-log-repository';
import type { QualityDb } from './store';

export interface QualityStores {
  /** `apply_patch_log`: every apply_patch attempt. */
  patchLog: PatchLogRepository;
  /** `edit_capsules`: each run's changes as one reviewable unit. */
  capsules: CapsuleRepository;
  /** `findings`, `finding_events`: the finding lifecycle. */
  findings: FindingRepository;
}

/**
 * The quality database on SQLite: writes open (and migrate) it; readouts never create it (CLI-07:
 * show-finding-lifecycle is a read-only projection).
 */
export function sqliteQualityDb(deps: { dataDir: string; db: () => Db; hasDb: () => boolean }): QualityDb {
  return {
    write: deps.db,
    read: () => (deps.hasDb() || existsSync(join(deps.dataDir, DB_FILE)) ? deps.db() : undefined),
  };
}

export function createSqliteQualityStores(db: QualityDb): QualityStores {
  return {
    patchLog: createPatchLogRepository(db),
    capsules: createCapsuleRepository(db),
    findings: createFindingRepository(db),
  };
}

export function createPostgresQualityStores(deps: { sql: SqlClient }): QualityStores {
  return {
    patchLog: createPostgresPatchLogRepository(deps),
    capsules: createPostgresCapsuleRepository(deps),
    findings: createPostgresFindingRepository(deps),
  };
}
