/**
 * `[store]`: where durable state lives. Unset, the embedded SQLite file in the data dir (the
 * default); a `postgres://` URL selects PostgreSQL (docs/cluster.md).
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const storeSchema = lazy(() =>
  z
    .strictObject({
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// or postgresql:// URL')
        // The driver throws (a stack trace, at the first query) on a URL it cannot parse: a bad
        // port, an unencoded character. The value is not echoed: it holds the password.
        .refine(
          (url) => URL.canParse(url),
          'not a valid URL: check the host and the port (1-65535), and percent-encode special characters of the user and password (%40 for @)',
        )
        .optional()
        .describe(
          'PostgreSQL connection URL (postgres://user:${PGPASSWORD}@host:5432/db); SVC_STORE_URL overrides it. Unset, state is in the SQLite file. The password is never printed.',
        ),
      pool_size: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(10)
        .describe('Connections in the PostgreSQL pool.'),
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
      node_heartbeat_ms: z
        .number()
        .int()
        .min(100)
        .default(3_000)
        .describe(
          'PostgreSQL: how often each node writes its heartbeat and looks for nodes that stopped (their runs are interrupted).',
        ),
      node_stale_ms: z
        .number()
        .int()
        .min(500)
        .default(10_000)
        .describe(
          'PostgreSQL: a node whose last heartbeat is older than this is gone; at least twice node_heartbeat_ms.',
        ),
    })
    .refine((store) => store.node_stale_ms >= 2 * store.node_heartbeat_ms, {
      message:
        'node_stale_ms must be at least twice node_heartbeat_ms (a live node would be taken for dead between two heartbeats)',
      path: ['node_stale_ms'],
    }),
);
