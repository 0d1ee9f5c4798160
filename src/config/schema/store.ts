/**
 * `[store]`: where durable state lives. Unset, the embedded SQLite file in the data dir (the
 * default); a `postgres://` URL selects PostgreSQL (docs/cluster.md).
 * @module
 */
import { z } from 'zod';

export const storeSchema = z.strictObject({
  url: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// or postgresql:// URL')
    .optional()
    .describe(
      'PostgreSQL connection URL (postgres://user:${PGPASSWORD}@host:5432/db); SVC_STORE_URL overrides it. Unset, state is in the SQLite file. The password is never printed.',
    ),
  pool_size: z.number().int().min(1).max(1000).default(10).describe('Connections in the PostgreSQL pool.'),
  statement_timeout_ms: z
    .number()
    .int()
    .min(0)
    .default(30_000)
    .describe('statement_timeout set on each PostgreSQL connection (0: none).'),
  connect_timeout_ms: z
    .number()
    .int()
    .min(100)
    .default(5_000)
    .describe('How long opening a PostgreSQL connection may take before it is an error.'),
});
