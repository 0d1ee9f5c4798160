/**
 * `describe_context`: what the agent sees as context — the project's context files (names and
 * sizes, never their text), the environment block of the system prompt (workspace, platform, date,
 * git summary), the last prompt assembly of the session, and the cached codebase summary
 * (refreshed on request, at most once per `options.codebase_context.min_refresh_interval_seconds`).
 * @module
 */

import { findContextFiles, gitSummary } from '../agent/environment';
import type { Config } from '../config/schema';
import type { Redactor } from '../redact';
import type { Clock } from '../util/ids';
import { sha256Prefix } from './prompt-stack';
import type { ObserveService } from './service';

export interface DescribeContextDeps {
  readonly workspace: string;
  readonly config: Config;
  readonly clock: Clock;
  readonly redactor: Redactor;
  readonly observe: Pick<ObserveService, 'codebase' | 'promptStack'>;
}

export async function buildDescribeContext(
  app: DescribeContextDeps,
  input: { refresh_codebase_context: boolean },
  context: { sessionId?: string; signal?: AbortSignal },
) {
  const names = app.config.options.context_files;
  const files = findContextFiles(app.workspace, names);
  // Fresh: the runs' summary of the last second would not show what they just changed.
  const git = await gitSummary(app.workspace, context.signal, { fresh: true });
  const warnings: string[] = [];

  let codebase: Record<string, unknown>;
  try {
    const { cached, refresh } = await app.observe.codebase.describe({
      refresh: input.refresh_codebase_context,
      signal: context.signal,
    });
    const now = app.clock.now();
    const intervalSeconds = app.config.options.codebase_context.min_refresh_interval_seconds;
    codebase = {
      available: true,
      reason: null,
      computed_at: cached.computed_at,
      age_seconds: Math.max(0, Math.floor((now - cached.computed_at) / 1000)),
      computations: cached.computations,
      compute_ms: cached.compute_ms,
      min_refresh_interval_seconds: intervalSeconds,
      next_refresh_allowed_at: cached.computed_at + intervalSeconds * 1000,
      refresh,
      in_system_prompt: true,
      summary: cached.summary,
    };
    if (refresh.reason === 'rate_limited') {
      warnings.push(
        `codebase_context_rate_limited: refreshed ${Math.floor((now - cached.computed_at) / 1000)}s ago; the next refresh is allowed in ${refresh.retry_after_seconds}s (options.codebase_context.min_refresh_interval_seconds = ${intervalSeconds})`,
      );
    }
  } catch (error) {
    const reason = app.redactor.string(error instanceof Error ? error.message : String(error));
    codebase = { available: false, reason, in_system_prompt: false, summary: null };
    warnings.push(`codebase_context_unavailable: ${reason}`);
  }

  let lastBuild: Record<string, unknown> | null = null;
  try {
    const build = (await app.observe.promptStack.recent({ sessionId: context.sessionId, limit: 1 }))[0];
    if (build) {
      lastBuild = {
        build_id: build.build_id,
        session_id: build.session_id,
        run_id: build.run_id,
        agent: build.agent,
        created_at: build.created_at,
        total_chars: build.total_chars,
        token_estimate: build.token_estimate,
        sha256_prefix: build.sha256_prefix,
        sections: build.sections.map((s) => ({ name: s.name, source: s.source, chars: s.chars })),
      };
    }
  } catch {
    // no prompt ledger (read-only or missing database): the answer says null
  }

  return {
    workspace: app.workspace,
    generated_at: app.clock.now(),
    session_id: context.sessionId ?? null,
    context_files: {
      names,
      found: files.map((f) => ({
        path: f.path,
        chars: f.content.length,
        truncated: f.truncated,
        sha256_prefix: sha256Prefix(f.content),
      })),
    },
    environment: {
      workspace: app.workspace,
      platform: process.platform,
      arch: process.arch,
      date: new Date(app.clock.now()).toISOString().slice(0, 10),
      git: git
        ? {
            root: git.root,
            branch: git.branch,
            changed_paths: git.changed,
            recent_commits: git.recent_commits.length,
          }
        : null,
    },
    last_prompt_build: lastBuild,
    codebase_context: codebase,
    warnings,
  };
}
