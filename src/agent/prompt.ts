/**
 * System prompt assembly for a run: the base prompt, the agent kind's instructions, the
 * environment (workspace, platform, date, git summary), the project's context files, and the
 * sections other domains contribute (`app.promptSections`: active pack preamble, adaptive
 * guidance…). The effective tool set goes to the model as tool definitions, not as prose.
 * @module
 */

import type { SessionStart } from '../permissions/tool-policy';
import { sameItems } from '../util/arrays';
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
    /** What the run's start knows of the session, handed to each section (`SessionStart`). */
    start?: SessionStart;
    /** Blocks the run adds after the others (the deferred tool listing). */
    extra?: { name: string; source: string; text: string }[];
  },
): Promise<PromptParts> {
  const git = await gitSummary(app.workspace, input.signal);
  const contextFiles = findContextFiles(app.workspace, app.config.options.context_files);
  const sections: { source: string; text: string }[] = [];
  for (const section of app.promptSections) {
    try {
      // A section that answers at once (packs off, the MCP start) is not awaited: no promise.
      const answer = section(input.sessionId, input.start);
      const value = answer && 'then' in answer ? await answer : answer;
      if (value?.text.trim()) sections.push(value);
    } catch (error) {
      app.log.warn('prompt section failed', { error });
    }
  }
  const last = keptFor(app);
  // Each block with what it is and where it comes from, for the prompt stack ledger.
  // Pushed, not a literal of spreads then `filter`: TurboFan's inlined `map` and `filter` answer
  // arrays of other maps than the builtins', a deopt at the first optimized call (p-deopt).
  const stack: { name: string; source: string; text: string }[] = [
    { name: 'base', source: 'builtin', text: SYSTEM_PROMPT },
  ];
  if (input.kind.prompt)
    stack.push({
      name: 'agent_kind',
      source: `agent:${input.kind.id}`,
      text: kindBlock(input.kind, input.kind.prompt),
    });
  stack.push({ name: 'environment', source: 'workspace', text: environmentText(app, git, last) });
  if (contextFiles.length) stack.push({ name: 'context_files', ...contextFilesBlock(contextFiles, last) });
  for (const s of sections) stack.push({ name: 'extension', source: s.source, text: s.text.trim() });
  if (input.extra) for (const block of input.extra) stack.push(block);
  const system = joined(stack, last);
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

/**
 * What the last assembly of a host built, kept for the next (a service assembles the same prompt
 * for every compat request of its workspace, a run's steps use it as it is): each block's inputs
 * and text, and the joined prompt. A block whose inputs are the same objects is the kept text; the
 * joined prompt of blocks equal to the kept ones (compared by content, so a changed input is
 * always a new text) is the kept string itself. So what is keyed by the text downstream — the
 * prompt stack's hashes (../observe/prompt-stack.ts), the system message and its encoded bytes
 * (./step-request.ts `systemMessage`) — finds the same string, without a join, hash or compare of
 * its characters.
 */
interface Kept {
  texts: string[];
  system: string;
  environment?: { workspace: string; day: string; git: GitSummary | undefined; text: string };
  files?: { files: ContextFile[]; source: string; text: string };
}

const kept = new WeakMap<AgentHost, Kept>();

function keptFor(app: AgentHost): Kept {
  let entry = kept.get(app);
  if (!entry) {
    entry = { texts: [], system: '' };
    kept.set(app, entry);
  }
  return entry;
}

/** The blocks' texts joined: the kept prompt when every text is the kept one at its place. */
function joined(stack: readonly { text: string }[], last: Kept): string {
  const texts = last.texts;
  let same = texts.length === stack.length;
  for (let i = 0; same && i < stack.length; i++) same = stack[i].text === texts[i];
  if (same) return last.system;
  last.texts = stack.map((b) => b.text);
  last.system = last.texts.join('\n\n');
  return last.system;
}

const kindBlocks = new WeakMap<AgentKind, { id: string; prompt: string; text: string }>();

function kindBlock(kind: AgentKind, prompt: string): string {
  const hit = kindBlocks.get(kind);
  if (hit?.id === kind.id && hit.prompt === prompt) return hit.text;
  const text = `# Agent: ${kind.id}\n${prompt}`;
  kindBlocks.set(kind, { id: kind.id, prompt, text });
  return text;
}

function environmentText(app: AgentHost, git: GitSummary | undefined, last: Kept): string {
  const day = new Date(app.clock.now()).toISOString().slice(0, 10);
  const env = last.environment;
  // The git summary is one object for the runs of a second (./environment.ts `gitSummary`).
  if (env && env.git === git && env.day === day && env.workspace === app.workspace) return env.text;
  const text = environmentBlock(app, git, day);
  last.environment = { workspace: app.workspace, day, git, text };
  return text;
}

/** The context files' block and source: the kept ones while the files are the same objects. */
function contextFilesBlock(files: ContextFile[], last: Kept): { source: string; text: string } {
  const hit = last.files;
  if (hit && sameItems(hit.files, files)) return { source: hit.source, text: hit.text };
  const block = { source: files.map((f) => f.path).join(', '), text: contextBlock(files) };
  last.files = { files, ...block };
  return block;
}

function environmentBlock(app: AgentHost, git: GitSummary | undefined, date: string): string {
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
