/**
 * PostgreSQL migration 10 (issue 18): `model_calls.ttft_ms` and `duration_ms` hold fractions of a
 * millisecond (they are measured with `performance.now()`), as SQLite keeps them; BIGINT refused
 * them, so the cost ledger's writes failed on PostgreSQL.
 * @module
 */
export const modelCallTimesDdl = `
ALTER TABLE model_calls ALTER COLUMN ttft_ms TYPE DOUBLE PRECISION, ALTER COLUMN duration_ms TYPE DOUBLE PRECISION;
`;
