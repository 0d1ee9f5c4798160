/**
 * The compat ledger (spec: "The compat ledger path also needs `[options.openai_compat]`",
 * TOOLS-24): one row per chat-completions request, keyed by its `request_id` (the completion `id`
 * the client got), pointing at the agent run that answered it. The run's own events (phases, model
 * steps, tool calls) live in the run ledger; the compat layer appends `openai_compat.request`,
 * `openai_compat.tool_denied` and `openai_compat.response` there. Without `[options.openai_compat]`
 * (or with `ledger = false`) nothing is recorded here: the runs routes stay empty. The rows are
 * stored by `runs/compat-request-repository.ts`.
 * @module
 */
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import type { CompatRequestRepository, CompatRequestRow } from '../../../runs/compat-request-repository';
import type { RunEvent } from '../../../runs/run-ledger';
import type { ClaimAlongside, FinishAlongside } from '../../../runs/types';

export type { CompatRequestRow };

/** Whether compat requests are recorded, and why not. */
export function ledgerEnabled(app: App): { enabled: boolean; reason: string } {
  const compat = app.config.options.openai_compat;
  if (!compat) return { enabled: false, reason: '[options.openai_compat] is not configured' };
  if (!compat.ledger) return { enabled: false, reason: 'options.openai_compat.ledger is false' };
  const store = app.runs.available();
  if (!store.ok) return { enabled: false, reason: store.reason };
  return { enabled: true, reason: 'recording every compat request as a run' };
}

export async function recordRequest(app: App, row: Omit<CompatRequestRow, 'finished_at'>): Promise<void> {
  await requests(app).insert(row);
}

/** Whether the request's row was there to finish (and so its run: see CompatRequestRepository.finish). */
export async function finishRequest(
  app: App,
  requestId: string,
  patch: Pick<
    CompatRequestRow,
    'status' | 'finish_reason' | 'http_status' | 'error' | 'prompt_tokens' | 'completion_tokens'
  >,
): Promise<boolean> {
  return await requests(app).finish(requestId, { ...patch, finished_at: app.clock.now() });
}

/**
 * The row's insert and its run's `openai_compat.request` event in one statement where the store
 * can (PostgreSQL, `RunLedger.appendAlongside`); false: the caller writes them one by one. The
 * run is the one just created: missing, neither is written (an error, as the append's would be).
 */
export async function recordRequestWithEvent(
  app: App,
  row: Omit<CompatRequestRow, 'finished_at'>,
  payload: Record<string, unknown>,
): Promise<boolean> {
  const write = requests(app).insertWrite?.(row);
  if (!write || !app.runs.appendAlongside) return false;
  const event = await app.runs.appendAlongside(row.run_id, 'openai_compat.request', payload, write);
  if (!event)
    throw new SvcError(
      'not_found',
      `run_id: no run "${row.run_id}", or request "${row.request_id}" recorded already`,
    );
  return true;
}

/**
 * The row's insert and its run's `openai_compat.request` event as a write of the run's claim
 * (`SendInput.claimAlongside`) where the store can (PostgreSQL); undefined: the caller records
 * them after the send. `written` is told when the claim wrote both, `opened` after it once the
 * run's prompt message is written (`ClaimAlongside.opened`).
 */
export function requestInClaim(
  app: App,
  row: Omit<CompatRequestRow, 'finished_at'>,
  payload: Record<string, unknown>,
  written: () => void,
  opened: () => void,
): ClaimAlongside | undefined {
  const write = requests(app).insertAfterClaim?.(row);
  if (!write) return undefined;
  return { runId: row.run_id, write, event: { type: 'openai_compat.request', payload }, written, opened };
}

/**
 * The row's end and, when its run is still there, the run's `openai_compat.response` event in
 * one statement where the store can (as `recordRequestWithEvent`); false: the caller writes them.
 */
export async function finishRequestWithEvent(
  app: App,
  requestId: string,
  runId: string,
  patch: Parameters<typeof finishRequest>[2],
  payload: Record<string, unknown>,
): Promise<boolean> {
  const write = requests(app).finishWrite?.(requestId, { ...patch, finished_at: app.clock.now() });
  if (!write || !app.runs.appendAlongside) return false;
  await app.runs.appendAlongside(runId, 'openai_compat.response', payload, write);
  return true;
}

/**
 * The row's end and the run's `openai_compat.response` event as a write of the run's finish
 * (`AgentService.finishWith`; PostgreSQL p-pgcompat6, SQLite p-syncrepo); undefined: the
 * caller writes them once the run ended. `written` is told when the finish wrote both.
 */
export function finishInRun(
  app: App,
  requestId: string,
  patch: Parameters<typeof finishRequest>[2],
  payload: Record<string, unknown>,
  written: () => void,
): FinishAlongside | undefined {
  // Not `{ ...patch, finished_at }`: a property after a spread goes through V8's runtime on Node 20
  // and makes a map a call; `Object.assign` onto `{}` reuses them (p-sqlprofile). The same object.
  const write = requests(app).finishInRunFinish?.(
    requestId,
    Object.assign({}, patch, { finished_at: app.clock.now() }),
  );
  if (!write) return undefined;
  return { write, event: { type: 'openai_compat.response', payload }, written };
}

export async function listRequests(
  app: App,
  options: { limit: number },
): Promise<{ rows: CompatRequestRow[]; total: number }> {
  return await requests(app).list(options);
}

export async function getRequest(app: App, requestId: string): Promise<CompatRequestRow | undefined> {
  return await requests(app).get(requestId);
}

export async function requestEvents(app: App, row: CompatRequestRow): Promise<RunEvent[]> {
  return (await app.runs.get(row.run_id)) ? await app.runs.events(row.run_id) : [];
}

/** The table's repository on the App's store. */
function requests(app: App): CompatRequestRepository {
  return app.compatRequests;
}
