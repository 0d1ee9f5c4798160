/**
 * `/why`: the details of the latest failure, one key away from the one-line notice. The failure
 * the transcript saw (a failed run or a refused tool call) when there is one, else the newest
 * failed run of the session from the run ledger (a reopened or attached session).
 * @module
 */
import type { FailureReport } from '../../errors';
import type { ToolResult, TuiClient } from './client';

export interface SeenFailure {
  run_id?: string;
  tool?: string;
  failure: FailureReport;
}

export function whyText(seen: SeenFailure): string {
  const { failure } = seen;
  const lines = [
    failure.summary,
    '',
    `next: ${failure.next}`,
    '',
    `code: ${failure.code}`,
    ...(seen.run_id ? [`run: ${seen.run_id} (svc runs get ${seen.run_id})`] : []),
    ...(seen.tool ? [`tool: ${seen.tool}`] : []),
  ];
  const details = Object.entries(failure.details ?? {});
  if (details.length) {
    lines.push('', 'details:');
    for (const [key, value] of details) {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      lines.push(`  ${key}: ${text}`);
    }
  }
  lines.push('', 'log: svc logs --level warn');
  return lines.join('\n');
}

/** The loader behind `/why`. */
export async function loadWhy(
  client: Pick<TuiClient, 'callTool'>,
  seen: SeenFailure | undefined,
  sessionId: string | undefined,
  signal: AbortSignal,
): Promise<ToolResult> {
  if (seen) return { value: seen, text: whyText(seen) };
  if (!sessionId) return { value: null, text: 'nothing failed in this session' };
  const result = await client.callTool(
    'list_agent_runs',
    { session_id: sessionId, status: ['failed'], limit: 1 },
    { sessionId, signal },
  );
  const run = (
    result.value as { runs?: { id: string; failure?: FailureReport | null; error?: string | null }[] }
  ).runs?.[0];
  if (!run) return { value: null, text: 'nothing failed in this session' };
  if (!run.failure) return { value: run, text: `run ${run.id} failed: ${run.error ?? 'no reason recorded'}` };
  return { value: run, text: whyText({ run_id: run.id, failure: run.failure }) };
}
