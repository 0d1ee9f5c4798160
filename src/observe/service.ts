/**
 * `app.observe`: the stateful parts of the observability and context readouts — the prompt stack
 * ledger (every system-prompt assembly, recorded by `agent/prompt.ts`) and the cached codebase
 * summary behind `describe_context`. The read models themselves are functions over the App.
 * @module
 */
import type { App } from '../app';
import { type CodebaseContextService, createCodebaseContext } from './codebase-context';
import { createPromptStackLedger, type PromptStackLedger } from './prompt-stack';

export interface ObserveService {
  readonly promptStack: PromptStackLedger;
  readonly codebase: CodebaseContextService;
}

export function createObserveService(app: () => App): ObserveService {
  return {
    promptStack: createPromptStackLedger({
      db: () => app().db,
      clock: { now: () => app().clock.now() },
      ids: { next: (prefix) => app().ids.next(prefix) },
    }),
    codebase: createCodebaseContext(app),
  };
}
