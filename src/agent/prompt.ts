/**
 * System prompt assembly for a run: the base prompt, the agent kind's instructions, the
 * environment (workspace, platform, date, git summary), the project's context files, and the
 * sections other domains contribute (`app.promptSections`: active pack preamble, adaptive
 * guidance…). The effective tool set goes to the model as tool definitions, not as prose.
 * @module
 */

import type { AgentKind } from './agent-kinds';
import type { AgentHost } from './deps';
import { type ContextFile, findContextFiles, type GitSummary, gitSummary } from './environment';
import { SYSTEM_PROMPT } from './system-prompt.prompt';

export interface PromptParts {
  system: string;
  /** What went in, for the run ledger (metadata only: names and sizes, never the text). */
  manifest: {
    agent: string;
    context_files: { path: string; chars: number; truncated: boolean }[];
    sections: string[];
    git: boolean;
    chars: number;
  };
}

export async function assembleSystemPrompt(
  app: AgentHost,
  input: {
    sessionId: string;
    kind: AgentKind;
    signal?: AbortSignal;
    runId?: string;
    /** Blocks the run adds after the others (the deferred tool listing). */
    extra?: { name: string; source: string; text: string }[];
  },
): Promise<PromptParts> {
  const git = await gitSummary(app.workspace, input.signal);
  const contextFiles = findContextFiles(app.workspace, app.config.options.context_files);
  const sections: { source: string; text: string }[] = [];
  for (const section of app.promptSections) {
    try {
      const value = await section(input.sessionId);
      if (value?.text.trim()) sections.push(value);
    } catch (error) {
      app.log.warn('prompt section failed', { error });
    }
  }
  // Each block with what it is and where it comes from, for the prompt stack ledger.
  const stack = [
    { name: 'base', source: 'builtin', text: SYSTEM_PROMPT },
    input.kind.prompt
      ? {
          name: 'agent_kind',
          source: `agent:${input.kind.id}`,
          text: `# Agent: ${input.kind.id}\n${input.kind.prompt}`,
        }
      : undefined,
    { name: 'environment', source: 'workspace', text: environmentBlock(app, git) },
    contextFiles.length
      ? {
          name: 'context_files',
          source: contextFiles.map((f) => f.path).join(', '),
          text: contextBlock(contextFiles),
        }
      : undefined,
    ...extensionBlocks(sections),
    ...(input.extra ?? []),
  ].filter((b) => b !== undefined);
  const system = joinedTexts(stack);
  try {
    await app.observe.promptStack.record({
      sessionId: input.sessionId,
      runId: input.runId,
      agent: input.kind.id,
      system,
      sections: stack,
    });
  } catch (error) {
    // Evidence, not a gate: a prompt that cannot be recorded is still sent.
    app.log.warn('prompt stack build not recorded', { error });
  }
  return {
    system,
    manifest: {
      agent: input.kind.id,
      context_files: contextFiles.map((f) => ({
        path: f.path,
        chars: f.content.length,
        truncated: f.truncated,
      })),
      sections: sections.map((s) => s.source),
      git: git !== undefined,
      chars: system.length,
    },
  };
}

// The two below push where `map` was: TurboFan's inlined `map` answers a holey array, and the
// spread and `join` after it deopted the optimized assembleSystemPrompt once each
// (docs/performance.md, p-jit).
function extensionBlocks(sections: { source: string; text: string }[]) {
  const blocks: { name: string; source: string; text: string }[] = [];
  for (const s of sections) blocks.push({ name: 'extension', source: s.source, text: s.text.trim() });
  return blocks;
}

function joinedTexts(blocks: readonly { text: string }[]): string {
  const texts: string[] = [];
  for (const block of blocks) texts.push(block.text);
  return texts.join('\n\n');
}

function environmentBlock(app: AgentHost, git: GitSummary | undefined): string {
  const date = new Date(app.clock.now()).toISOString().slice(0, 10);
  const lines = [
    '# Environment',
    `Working directory (workspace root): ${app.workspace}`,
    `Platform: ${process.platform} (${process.arch})`,
    `Today's date: ${date}`,
  ];
  if (!git) {
    lines.push('Git: not a git repository');
  } else {
    lines.push(`Git repository root: ${git.root}`);
    if (git.branch) lines.push(`Current branch: ${git.branch}`);
    lines.push(
      git.changed === 0
        ? 'Working tree: clean'
        : `Working tree: ${git.changed} changed path(s)${git.changed > git.status.length ? ` (first ${git.status.length})` : ''}:\n${git.status.map((l) => `  ${l}`).join('\n')}`,
    );
    if (git.recent_commits.length)
      lines.push(`Recent commits:\n${git.recent_commits.map((l) => `  ${l}`).join('\n')}`);
  }
  return lines.join('\n');
}

function contextBlock(files: ContextFile[]): string {
  return [
    '# Project instructions',
    'These files come from the project. Follow their instructions; the more specific (deeper) file wins on conflict.',
    ...files.map(
      (f) =>
        `<file path="${f.path}">\n${f.content.trimEnd()}${f.truncated ? '\n[… truncated]' : ''}\n</file>`,
    ),
  ].join('\n\n');
}
