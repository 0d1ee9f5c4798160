/**
 * Prompt assembly. Pins: the system prompt carries the base instructions, the agent kind's
 * instructions, the environment (workspace, platform, date, git summary), the context files
 * found from the workspace up to the repository root (outermost first, options.context_files
 * names only), and app.promptSections; the run ledger gets the manifest, never the text.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { agentKind } from './agent-kinds';
import { assembleSystemPrompt } from './prompt';

describe('system prompt', () => {
  it('includes environment, git summary, context files up to the repo root and prompt sections', async () => {
    const repo = tmpWorkspace({
      git: true,
      files: { 'AGENTS.md': 'Root rule: use tabs.\n', 'pkg/CLAUDE.md': 'Package rule: no semicolons.\n' },
    });
    mkdirSync(join(repo, 'pkg', 'sub'), { recursive: true });
    writeFileSync(join(repo, 'pkg', 'sub', 'svc.md'), 'Sub rule: be brief.\n');
    writeFileSync(join(repo, 'pkg', 'sub', 'README.md'), 'not a context file\n');
    writeFileSync(join(repo, 'pkg', 'sub', 'new.txt'), 'untracked\n');
    const workspace = join(repo, 'pkg', 'sub');
    const app = await makeTestApp({ workspace });
    app.promptSections.push((sessionId) => ({
      source: 'test pack',
      text: `Pack preamble for ${sessionId}.`,
    }));
    app.promptSections.push(() => undefined);
    const { system, manifest } = await assembleSystemPrompt(app, {
      sessionId: 'ses_x',
      kind: agentKind(app.config, 'plan'),
    });
    expect(system).toMatch(/^You are svc, an autonomous coding agent/);
    expect(system).toContain('# Agent: plan\nYou are in plan mode.');
    expect(system).toContain(`Working directory (workspace root): ${workspace}`);
    expect(system).toContain("Today's date: 2026-11-22");
    expect(system).toContain(`Git repository root: ${repo}`);
    expect(system).toContain('Current branch: main');
    expect(system).toMatch(/Working tree: \d+ changed path\(s\)/);
    expect(system).toContain('?? pkg/sub/');
    const rootAt = system.indexOf('<file path="../../AGENTS.md">\nRoot rule: use tabs.\n</file>');
    const pkgAt = system.indexOf('<file path="../CLAUDE.md">\nPackage rule: no semicolons.\n</file>');
    const subAt = system.indexOf('<file path="svc.md">\nSub rule: be brief.\n</file>');
    expect(rootAt).toBeGreaterThan(0);
    expect(pkgAt).toBeGreaterThan(rootAt);
    expect(subAt).toBeGreaterThan(pkgAt);
    expect(system).not.toContain('not a context file');
    expect(system.endsWith('Pack preamble for ses_x.')).toBe(true);
    expect(manifest).toEqual({
      agent: 'plan',
      context_files: [
        { path: '../../AGENTS.md', chars: 21, truncated: false },
        { path: '../CLAUDE.md', chars: 29, truncated: false },
        { path: 'svc.md', chars: 20, truncated: false },
      ],
      sections: ['test pack'],
      git: true,
      chars: system.length,
    });
  });

  it('says so outside a git repository and honours options.context_files', async () => {
    const app = await makeTestApp({
      files: { 'AGENTS.md': 'ignored\n', 'RULES.md': 'custom rules\n' },
      config: { options: { context_files: ['RULES.md'] } },
    });
    const { system } = await assembleSystemPrompt(app, {
      sessionId: 's',
      kind: agentKind(app.config, 'build'),
    });
    expect(system).toContain('Git: not a git repository');
    expect(system).toContain('<file path="RULES.md">\ncustom rules\n</file>');
    expect(system).not.toContain('ignored');
  });

  it('is what the model receives, and the ledger records only the manifest', async () => {
    const { app, provider } = await agentApp([reply().text('ok')], {
      files: { 'AGENTS.md': 'secret-ish house rules\n' },
    });
    const result = await app.agent.run({ prompt: 'hi' });
    const systemMessage = provider.requests[0].body.messages[0];
    expect(systemMessage.role).toBe('system');
    expect(systemMessage.content).toContain('secret-ish house rules');
    const assembled = (await app.runs.events(result.run_id, { types: ['prompt.assembled'] }))[0];
    expect(JSON.stringify(assembled.payload)).not.toContain('house rules');
    expect(assembled.payload).toMatchObject({ context_files: [{ path: 'AGENTS.md' }] });
  });
});
