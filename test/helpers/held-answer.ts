/**
 * What the PostgreSQL lone-start tests share (test/http/pg-compat-start-*.test.ts): the compat
 * start's answer held by the test, and the model requests told apart by their prompt.
 */
import type { App } from '../../src/app';
import type { HeldPrompt } from '../../src/sessions/types';
import { type RecordedRequest, reply } from './fake-provider';

/**
 * The start's answer held: `createClaimed` answers once `release` is called (its statement
 * answered before: `statement` resolves then); `order` gets `answered` when it is let go.
 */
export function holdStartAnswer(app: App, order: string[]) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let answeredHere!: () => void;
  const statement = new Promise<void>((resolve) => {
    answeredHere = resolve;
  });
  const create = app.runs.createClaimed!.bind(app.runs);
  app.runs.createClaimed = async (...args) => {
    try {
      return await create(...args);
    } finally {
      answeredHere();
      await released;
      order.push('answered');
    }
  };
  return { release, statement };
}

/** The last user message of a model request (its text). */
export const lastUser = (request: RecordedRequest): unknown =>
  ((request.body?.messages ?? []) as { role: string; content: unknown }[])
    .filter((m) => m.role === 'user')
    .at(-1)?.content;

/** The model's answer to `later`; to any other prompt, headers and then nothing (never written whole). */
const never = new Promise<void>(() => {});
export const laterOnly = (request: RecordedRequest) =>
  lastUser(request) === 'later' ? reply().text('later') : reply().text('never stored').pauseAt(0, never);

/**
 * STORE-PG-310's fault: the prompt's `written()` (told after the start statement's answer, in
 * `sendNow`: the start is committed then) throws `injected fault` until `off()`; `before` makes the
 * prompt's insert itself throw instead (nothing sent) while set.
 */
export function faultAfterWritten(app: App) {
  const original = app.sessions.promptInsert!.bind(app.sessions);
  let fault: 'before' | 'after' | undefined = 'after';
  app.sessions.promptInsert = (input) => {
    if (fault === 'before') throw new Error('injected fault');
    const prompt = original(input);
    if (fault !== 'after') return prompt;
    return {
      message: prompt.message,
      inserts: prompt.inserts,
      written: () => {
        prompt.written();
        throw new Error('injected fault');
      },
    } satisfies HeldPrompt;
  };
  return {
    set: (at: 'before' | 'after' | undefined) => {
      fault = at;
    },
    off: () => {
      fault = undefined;
    },
  };
}
