/**
 * The AgentStateStore contract (issue 18): the agent's `agent_state` table on every backend, run on
 * SQLite and PostgreSQL by ./agent-state.contract.test.ts. Pins: no current session at first; set
 * replaces (an upsert), clear removes, clearing twice is harmless; a stored id is returned as is
 * (the store does not check the session exists).
 */
import { expect, it } from 'vitest';
import type { AgentStateStore } from '../../../src/agent/agent-state-store';
import { withOpened } from './fixture';

export type OpenAgentStateStore = () => Promise<{ store: AgentStateStore; close: () => Promise<void> }>;

export function agentStateContract(open: OpenAgentStateStore): void {
  const withStore = withOpened(open, (f) => f.store);

  it(
    'STORE-PG-agent-state: the current session is set, replaced and cleared',
    withStore(async (store) => {
      expect(await store.currentSession()).toBeNull();
      await store.setCurrentSession('s_1', 10);
      expect(await store.currentSession()).toBe('s_1');
      await store.setCurrentSession('s_2', 20);
      expect(await store.currentSession()).toBe('s_2');
      await store.clearCurrentSession();
      expect(await store.currentSession()).toBeNull();
      await store.clearCurrentSession();
      expect(await store.currentSession()).toBeNull();
    }),
  );

  it(
    'STORE-PG-agent-state: an id of a session that does not exist is kept as given',
    withStore(async (store) => {
      await store.setCurrentSession('s_gone', 1);
      expect(await store.currentSession()).toBe('s_gone');
    }),
  );
}
