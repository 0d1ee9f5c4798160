/**
 * agentic_fetch: fetch a URL with the fetch tool's machinery (limits, HTML → markdown, the same
 * permission ask), then a sub-agent reads the page and answers a question about it. The
 * sub-agent gets only `fetch` (to follow a link when the answer is there), within the caller's
 * ceiling: an agent without fetch cannot reach the network through this tool either.
 * @module
 */
import type { AgentService, RunResult } from '../agent/types';
import { SvcError } from '../errors';
import type { OpContext } from '../workspace/context';
import type { FetchResult } from '../workspace/web';
import type { Workspace } from '../workspace/workspace';
import { assertDepth, type Caller, type DepthDeps, type ParentSessionDeps, parentSession } from './lineage';

/** Page characters handed to the sub-agent (the fetch tool returns at most 100 000). */
const PAGE_CHARS = 60_000;

export interface AgenticFetchResult {
  url: string;
  final_url: string;
  status: number;
  content_type: string;
  question: string;
  answer: string;
  run_status: RunResult['status'];
  run_id: string;
  session_id: string;
  parent_run_id: string | null;
  page_chars: number;
  truncated: boolean;
  error: string | null;
}

/** What agentic_fetch uses: the workspace's fetch, the session tree, the agent for the reader. */
export interface AgenticFetchDeps extends DepthDeps {
  readonly sessions: DepthDeps['sessions'] & ParentSessionDeps['sessions'];
  readonly ws: Pick<Workspace, 'web'>;
  readonly agent: Pick<AgentService, 'runChild'>;
}

export async function agenticFetch(
  deps: AgenticFetchDeps,
  caller: Caller,
  input: {
    url: string;
    question: string;
    format: 'markdown' | 'text' | 'html';
    agent: string;
    timeout_seconds?: number;
    max_turns?: number;
  },
  op: OpContext,
): Promise<AgenticFetchResult> {
  if (caller.ceiling && !caller.ceiling.includes('fetch')) {
    throw new SvcError(
      'forbidden',
      'agentic_fetch: the fetch tool is not available to this agent (withheld by its funnel)',
    );
  }
  const page: FetchResult = await deps.ws.web.fetch(
    { url: input.url, format: input.format, timeout_seconds: input.timeout_seconds },
    op,
  );
  const truncated = page.truncated || page.content.length > PAGE_CHARS;
  const content = page.content.slice(0, PAGE_CHARS);
  const parent = await parentSession(deps, caller, `fetch: ${page.final_url}`.slice(0, 80));
  await assertDepth(deps, parent.id, 'agentic_fetch');
  const run = await deps.agent.runChild({
    parentSessionId: parent.id,
    parentRunId: caller.runId,
    agent: input.agent,
    title: `fetch: ${page.final_url}`.slice(0, 80),
    prompt: `Answer the question below from the web page that follows. Quote the passages your answer rests on. If the page does not answer it, say so plainly; fetch a page it links to only when the answer is clearly there.

Question: ${input.question}

Page: ${page.final_url} (HTTP ${page.status}, ${page.content_type || 'unknown type'}${truncated ? ', truncated' : ''})
<page>
${content}
</page>`,
    signal: caller.signal,
    tools: ['fetch'],
    yolo: caller.yolo,
    unattended: caller.unattended,
    maxSteps: input.max_turns,
    metadata: { agentic_fetch: page.final_url },
  });
  return {
    url: input.url,
    final_url: page.final_url,
    status: page.status,
    content_type: page.content_type,
    question: input.question,
    answer: run.text,
    run_status: run.status,
    run_id: run.run_id,
    session_id: run.session_id,
    parent_run_id: run.parent_run_id,
    page_chars: content.length,
    truncated,
    error:
      run.status === 'completed' ? null : `the run ended ${run.status}${run.error ? `: ${run.error}` : ''}`,
  };
}
