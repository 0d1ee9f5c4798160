/**
 * AI SDK warnings (unsupported settings and the like) go to the App log, never to stdout or
 * stderr: stdout belongs to the MCP stdio transport and the TUI.
 */
import { generateText } from 'ai';
import { describe, expect, it, vi } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

describe('AI SDK warnings', () => {
  it('are logged to app.log and never printed to the console', async () => {
    const fake = await fakeProvider([reply().text('ok')]);
    const app = await makeTestApp({
      config: {
        providers: { acme: { type: 'openai-compat', base_url: fake.url } },
        models: { large: 'acme/m' },
      },
    });
    const spies = (['log', 'info', 'warn', 'error'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    const stdout = vi.spyOn(process.stdout, 'write');
    const stderr = vi.spyOn(process.stderr, 'write');
    try {
      const model = await app.models.resolve();
      const result = await generateText({ model: model.language_model, prompt: 'x', topK: 3 });
      expect(result.warnings?.length).toBeGreaterThan(0);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
      expect(stdout).not.toHaveBeenCalled();
      expect(stderr).not.toHaveBeenCalled();
    } finally {
      for (const spy of [...spies, stdout, stderr]) spy.mockRestore();
    }
    const logged = app.memoryLog.records.find((r) => r.message === 'ai sdk warnings');
    expect(logged).toBeTruthy();
    expect(JSON.stringify(logged)).toContain('topK');
  });
});
