/**
 * The first model request of a run prepared during its start's round trip (p-pgmodel, issue 18
 * item 6: PostgreSQL's lone compat start, ./run-early.ts `launchEarly`): sent while the start's
 * statement is on its way, its stream read only once the start answered ok (./step-ends.ts
 * `startGate`). Until then nothing of the step exists for the run: no part is read, so no event,
 * held write, usage, delta or compat chunk; what the model sends meanwhile waits in the HTTP
 * response's own buffers (the socket's and the stream's high-water marks: nothing is read ahead).
 * When the gate stays shut (the start failed, or a stop asked in the window aborted the run) the
 * request is aborted: its HTTP request destroyed (before or after its headers), its answer never
 * read. The trade-off: a start whose statement fails on the server after it was sent costs one
 * aborted model request.
 * @module
 */
import type { LanguageModelV3StreamResult } from '@ai-sdk/provider';
import { partsOf } from '../providers/stream-parts';
import type { StartGate } from './step-ends';

/**
 * `request(signal)` sent now, with `signal` (`run`, and the gate's own abort when it stays shut);
 * its answer once the gate opened (its failure then thrown, as the step's), undefined when it stayed
 * shut (the request aborted, its stream, if it came, returned unread).
 */
export async function requestWhileStarting(
  gate: StartGate,
  run: AbortSignal | undefined,
  request: (signal: AbortSignal) => PromiseLike<LanguageModelV3StreamResult>,
): Promise<LanguageModelV3StreamResult | undefined> {
  const shut = new AbortController();
  const requesting = Promise.resolve(request(run ? AbortSignal.any([run, shut.signal]) : shut.signal));
  // Handled here while the gate is asked: a failure is the step's only once it opened.
  requesting.catch(() => {});
  if (await gate.opens()) return await requesting;
  shut.abort(new Error('the run’s start did not go on: its model request aborted'));
  requesting.then((result) => partsOf(result).return?.()).catch(() => {});
  return undefined;
}
