/**
 * What the held-step tests share (test/store/pg-held-step.test.ts, pg-held-multi.test.ts): a
 * read-only echo and a read-only tool that asks, the step end's statements that carry a whole step,
 * and the checks of a run's rows and logs against SQLite's.
 */
import { expect, vi } from 'vitest';
import { z } from 'zod';
import { StepRecorder } from '../../src/agent/step-recorder';
import type { SqlClient } from '../../src/store/postgres/client';
import { defineTool } from '../../src/tools/core/define-tool';
import { echoTool } from './agent-harness';
import type { storeRun } from './pg-recorded-app';

export type Run = Awaited<ReturnType<typeof storeRun>>;

/** The echo tool flagged read-only (the step's start held for its end on PostgreSQL). */
export const readingEcho = { ...echoTool, readsOnly: true as const };

/** The step end's statement carrying the step's assistant message (inserted closed) and its held result. */
export const wholeStep = (text: string) =>
  /a AS \(INSERT INTO messages/.test(text) &&
  /n AS \(INSERT INTO messages/.test(text) &&
  /UPDATE agent_runs/.test(text);
/** The step end's statement carrying a text step's assistant message (inserted closed), no result. */
export const wholeText = (text: string) =>
  /a AS \(INSERT INTO messages/.test(text) &&
  !/n AS \(INSERT INTO messages/.test(text) &&
  /UPDATE agent_runs/.test(text);
export const MESSAGE_INSERT = /INSERT INTO messages/;

/** A read-only test tool that asks the operator itself. */
export function askingRead(log: string[]) {
  return defineTool({
    name: 'asking_read',
    family: 'test',
    tag: 'primitive',
    description: 'Asks, then answers.',
    input: z.strictObject({}),
    mutates: false,
    readsOnly: true,
    run: async (ctx) => {
      log.push('tool ran asking_read');
      await ctx.ask({ tool: 'asking_read', title: 'asking_read' });
      log.push('asked');
      return 'read';
    },
  });
}

/** The run events' types in seq order, with their seqs consecutive from 1. */
export function runTypes(r: Run): string[] {
  expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
  return r.runEvents.map((e) => e.type);
}

/** The messages' closing fields, to compare with SQLite's. */
export const closed = (r: Run) => r.messages.map((m) => [m.role, m.usage, m.cost, m.finished_at !== null]);

/** The run's `model_calls` rows. */
export async function modelCalls(r: Run): Promise<number> {
  const row = await (r.sql as SqlClient).one<{ n: number }>(
    'SELECT count(*)::int AS n FROM model_calls WHERE run_id = $1',
    [r.runId],
  );
  return row?.n ?? 0;
}

/** Session event ids consecutive, each once; a replay answers the delivered order. */
export async function sessionLogSound(r: Run) {
  const ids = r.sessionEvents.map((e) => e.id);
  expect(ids).toEqual(ids.map((_, i) => (ids[0] ?? 0) + i));
  const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
  expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
}

/**
 * From now on, `act` is called (with the recorder) at the `n`th text delta any step recorder
 * records, right after it is recorded; answers the spy's restore.
 */
export function atTextDelta(n: number, act: (recorder: StepRecorder) => void): () => void {
  return atTextDeltas({ [n]: act });
}

/** As `atTextDelta`, an action for each of several deltas (keyed by their count from 1). */
export function atTextDeltas(acts: Record<number, (recorder: StepRecorder) => void>): () => void {
  let deltas = 0;
  const textDelta = StepRecorder.prototype.textDelta;
  const spy = vi.spyOn(StepRecorder.prototype, 'textDelta').mockImplementation(function (
    this: StepRecorder,
    ...args: Parameters<StepRecorder['textDelta']>
  ) {
    const out = textDelta.apply(this, args);
    acts[++deltas]?.(this);
    return out;
  });
  return () => spy.mockRestore();
}
