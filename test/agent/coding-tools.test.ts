/**
 * The agent loop with the real coding tools. Pins: tools that ask themselves are asked once per
 * call, with their own precise request (read-only bash is auto-allowed; a write shows its path
 * and diff); with nobody attached a mutation fails with how to allow it; an attached operator's
 * "allow for session" covers later calls of the same scope.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

describe('agent loop with the coding tools', () => {
  it('auto-allows a read-only shell command and refuses an unattended mutation with the fix', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('bash', { command: 'ls' }),
        reply().toolCall('write', { path: 'new.txt', content: 'hello\n' }),
        reply().text('could not write'),
      ],
      { files: { 'a.txt': 'a\n' } },
    );
    const result = await app.agent.run({ prompt: 'list and write' });
    expect(result.status).toBe('completed');
    const outputs = (await app.sessions.messages(result.session_id))
      .flatMap((m) => m.parts)
      .filter((p) => p.type === 'tool-result') as { output: string; is_error: boolean }[];
    expect(outputs[0]).toMatchObject({ is_error: false, output: expect.stringContaining('a.txt') });
    expect(outputs[1]).toMatchObject({
      is_error: true,
      output: expect.stringMatching(/^forbidden: permission needed to .*new\.txt/),
    });
    expect(existsSync(join(app.workspace, 'new.txt'))).toBe(false);
    const vias = await app.runs.events(result.run_id, {
      types: ['permission.allowed', 'permission.unattended'],
    });
    expect(vias.map((e) => [e.type, e.payload.tool, e.payload.via ?? null])).toEqual([
      ['permission.allowed', 'bash', 'read_only'],
      ['permission.unattended', 'write', null],
    ]);
  });

  it('asks an attached operator once per write, with the path and diff, and honours allow for session', async () => {
    const { app } = await agentApp([
      reply().toolCall('write', { path: 'notes.txt', content: 'one\n' }),
      reply().toolCall('write', { path: 'notes.txt', content: 'two\n' }),
      reply().text('written twice'),
    ]);
    app.agent.attach('*', 'test');
    const asked: { title: string; details?: Record<string, unknown> }[] = [];
    app.bus.subscribe('*', (event) => {
      if (event.type !== 'permission.requested') return;
      const p = event.payload as { request_id: string; title: string; details?: Record<string, unknown> };
      asked.push(p);
      queueMicrotask(async () => await app.agent.answerPermission(p.request_id, 'allow_session', 'test'));
    });
    const result = await app.agent.run({ prompt: 'write notes' });
    expect(result).toMatchObject({ status: 'completed', text: 'written twice' });
    expect(readFileSync(join(app.workspace, 'notes.txt'), 'utf8')).toBe('two\n');
    // One prompt for the first write (the grant covers the second); none from the loop itself.
    expect(asked).toHaveLength(1);
    expect(asked[0].title).toContain('notes.txt');
    expect(JSON.stringify(asked[0].details)).toContain('+one');
  });
});
