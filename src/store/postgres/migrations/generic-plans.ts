/**
 * PostgreSQL migration 44 (issue 18, item 6, p-pgwall): `svc_append_events_across` (migration 34)
 * runs its statements on generic plans. PL/pgSQL keeps each statement's plan per connection, but
 * with `plan_cache_mode = auto` a statement whose custom plan looks cheaper than the generic one is
 * planned again on every call: the `prev` CTE and the `pg_notify` statement (each `unnest` of an
 * array parameter, whose length a custom plan knows) were planned on every one of their calls
 * (pg_stat_statements `plans` = `calls`), ≈ 0.3 ms of the server's time a call, and every statement
 * of an agent-loop step calls the function once. Their generic plans are the same index scans.
 */
export const genericPlansDdl = `
ALTER FUNCTION svc_append_events_across(TEXT[], TEXT[], TEXT[], BIGINT[], BIGINT[], TEXT)
  SET plan_cache_mode = force_generic_plan;
`;
