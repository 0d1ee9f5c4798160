/**
 * What the PostgreSQL lone-start tests share (test/http/pg-compat-start-*.test.ts): the compat
 * start's answer held by the test, and the model requests told apart by their prompt.
 */
import type { App } from '../../src/app';
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
