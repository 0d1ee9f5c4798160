/**
 * The PostgreSQL migration history (issue 18): its own numbering, separate from SQLite's
 * (src/store/migrations/). Migration 1 is the SQLite schema as of this backend's first release,
 * translated; later changes to a table get a migration in both histories. Forward-only: never edit
 * a migration that has shipped.
 * @module
 */
import type { Migration } from '../../migrations/types';
import { appendAcrossDdl } from './append-across';
import { appendAcrossOnceDdl } from './append-across-once';
import { appendAcrossOneDdl } from './append-across-one';
import { appendBatchDdl, appendFunctionsDdl } from './append-functions';
import { appendListDdl } from './append-list';
import { coreDdl } from './baseline-core';
import { operationsDdl } from './baseline-operations';
import { oversightDdl } from './baseline-oversight';
import { claimFunctionDdl } from './claim-function';
import { claimStartedDdl } from './claim-started';
import { clusterDdl } from './cluster';
import { compatOrderDdl } from './compat-order';
import { genericPlansDdl } from './generic-plans';
import { modelCallTimesDdl } from './model-call-times';
import { permissionRequestsDdl } from './permission-requests';
import { queueAfterClaimLockDdl } from './queue-after-claim-lock';
import { runEventsSetDdl } from './run-events-set';
import { runLastSeqDdl } from './run-last-seq';
import { runOrderDdl } from './run-order';
import { serviceIdentityDdl } from './service-identity';
import {
  adaptiveChangesDdl,
  sessionChangesDdl,
  sessionChangesWithoutInsertDdl,
  tableChangesDdl,
} from './table-changes';

export const postgresMigrations: readonly Migration[] = [
  { id: 1, name: 'baseline', sql: [coreDdl, operationsDdl, oversightDdl].join('\n') },
  { id: 2, name: 'workspace leases and node heartbeats', sql: clusterDdl },
  { id: 4, name: 'agent_runs row order', sql: runOrderDdl },
  { id: 9, name: 'openai_compat_requests row order', sql: compatOrderDdl },
  { id: 10, name: 'model_calls times in fractional ms', sql: modelCallTimesDdl },
  { id: 21, name: 'permission_requests (durable approvals)', sql: permissionRequestsDdl },
  { id: 30, name: 'session and run event appends as functions', sql: appendFunctionsDdl },
  { id: 31, name: 'session event appends in batches', sql: appendBatchDdl },
  { id: 32, name: 'run claims as one function', sql: claimFunctionDdl },
  { id: 33, name: 'run claims with their run.started event', sql: claimStartedDdl },
  { id: 34, name: 'session event appends across sessions', sql: appendAcrossDdl },
  { id: 35, name: 'change notifications of the tables nodes keep in memory', sql: tableChangesDdl },
  { id: 39, name: 'run event appends in a list', sql: appendListDdl },
  { id: 40, name: 'change notifications of adaptive_sessions', sql: adaptiveChangesDdl },
  { id: 41, name: 'a session queue read under its claim lock', sql: queueAfterClaimLockDdl },
  { id: 43, name: 'change notifications of sessions', sql: sessionChangesDdl },
  { id: 44, name: 'session event appends across sessions on generic plans', sql: genericPlansDdl },
  { id: 45, name: 'run event appends in a list set-based', sql: runEventsSetDdl },
  { id: 46, name: 'session event appends in one statement after the locks', sql: appendAcrossOnceDdl },
  { id: 47, name: 'session event appends of one session without the lock loop', sql: appendAcrossOneDdl },
  { id: 48, name: "a run's highest event seq read after its row's lock", sql: runLastSeqDdl },
  { id: 49, name: 'change notifications of sessions without inserts', sql: sessionChangesWithoutInsertDdl },
  { id: 50, name: 'service process identity', sql: serviceIdentityDdl },
];
