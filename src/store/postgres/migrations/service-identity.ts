/**
 * PostgreSQL migration 50 (SQLite 303): `service_processes.identity`, the registered process's
 * start time and boot id (JSON), so stop and restart signal a pid only while it is still that
 * process (src/scheduler/lifecycle.ts). Older rows keep NULL (cannot be verified: not signalled).
 * @module
 */
export const serviceIdentityDdl = `
ALTER TABLE service_processes ADD COLUMN identity TEXT;
`;
