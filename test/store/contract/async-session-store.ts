/**
 * The synchronous SQLite SessionStore behind the async interface, so the contract suite runs the
 * same cases on both backends. Each method is awaited as it will be once SessionStore is async.
 * @module
 */
import type { AsyncOf } from '../../../src/sessions/async-of';
import type { SessionStore } from '../../../src/sessions/types';

export function asyncSessionStore(store: SessionStore): AsyncOf<SessionStore> {
  return {
    create: async (input) => store.create(input),
    get: async (id) => store.get(id),
    require: async (id) => store.require(id),
    list: async (options) => store.list(options),
    family: async (rootId) => store.family(rootId),
    root: async (id) => store.root(id),
    update: async (id, patch) => store.update(id, patch),
    delete: async (id) => store.delete(id),
    search: async (query, options) => store.search(query, options),
    addUsage: async (id, usage) => store.addUsage(id, usage),
    appendMessage: async (input) => store.appendMessage(input),
    updateMessage: async (id, patch) => store.updateMessage(id, patch),
    getMessage: async (id) => store.getMessage(id),
    messages: async (sessionId, options) => store.messages(sessionId, options),
    deleteMessage: async (id) => store.deleteMessage(id),
    messageCount: async (sessionId) => store.messageCount(sessionId),
    count: async () => store.count(),
  };
}
