/**
 * The history a run reads before its first step (issue 17): once, unless the run changed it in
 * between (a pre-run compaction, a resumed run's waiting calls), then read again.
 * @module
 */
import { describe, expect, it, vi } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

describe('history reads at a run start', () => {
  it('ENGINE-STEP-9: a run reads its session history once before its first step', async () => {
    const { app, provider } = await agentApp([reply().text('hello')]);
    try {
      const session = await app.agent.createSession({ title: 'h' });
      const messages = vi.spyOn(app.sessions, 'messages');
      const result = await app.agent.run({ sessionId: session.id, prompt: 'hi' });
      expect(result.status).toBe('completed');
      const historyReads = messages.mock.calls.filter(([id]) => id === session.id);
      expect(historyReads).toHaveLength(1);
      // The one read carried the prompt the run appended.
      const users = (provider.requests[0].body.messages as { role: string; content: unknown }[]).filter(
        (m) => m.role === 'user',
      );
      expect(JSON.stringify(users.at(-1)?.content)).toContain('hi');
      messages.mockRestore();
    } finally {
      await app.close();
    }
  });
});
