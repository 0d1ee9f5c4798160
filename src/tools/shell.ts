/**
 * Shell tools (family core-shell): `bash`, `job_output`, `job_kill`. The analysis, approval,
 * process groups, persistent cwd, truncation and jobs live in src/workspace/shell.ts and jobs.ts.
 * @module
 */
import { z } from 'zod';
import type { JobOutput } from '../workspace/jobs';
import { MAX_JOB_WAIT_SECONDS } from '../workspace/jobs';
import type { BackgroundStart, BashResult } from '../workspace/shell';
import { MAX_TIMEOUT_SECONDS } from '../workspace/shell';
import { bashPrompt } from './bash.prompt';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';

export const bashInput = () =>
  z.strictObject({
    command: z
      .string()
      .min(1)
      .describe('The bash command line to run (pipes, &&, quotes and heredocs work).'),
    description: z
      .string()
      .max(200)
      .optional()
      .describe('Five to ten words saying what the command does, shown to the operator. Omit if obvious.'),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_TIMEOUT_SECONDS)
      .optional()
      .describe(
        'Stop the command after this many seconds. Omit for the default (options.bash.timeout_seconds, 120).',
      ),
    run_in_background: z
      .boolean()
      .default(false)
      .describe(
        'Start it as a background job and return its job_id at once (servers, watchers). Default false.',
      ),
  });

export const bash = defineTool({
  name: 'bash',
  family: 'core-shell',
  tag: 'primitive',
  description: bashPrompt,
  input: bashInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_bash' },
  run: async (ctx, input) => ctx.app.ws.shell.run(input, opContext(ctx, 'bash')),
  toModelOutput: (result: BashResult | BackgroundStart) => {
    if ('job_id' in result) {
      return `Started background job ${result.job_id} (pid ${result.pid ?? '?'}) in ${result.cwd}. Read its output with job_output, stop it with job_kill.`;
    }
    const parts = [result.output.trimEnd() || '(no output)'];
    if (result.truncated) parts.push(`[output truncated; the full output is in ${result.output_file}]`);
    if (result.timed_out) parts.push('[the command timed out]');
    else parts.push(`[exit code ${result.exit_code ?? `none (${result.signal ?? 'killed'})`}]`);
    if (result.cwd_reset) parts.push(`[${result.cwd_reset}]`);
    else if (result.cwd !== '.') parts.push(`[cwd: ${result.cwd}]`);
    // What the OS sandbox stopped, said as such: not a broken machine or a network outage.
    for (const denial of result.sandbox_denials ?? []) parts.push(`[${denial.message}]`);
    return parts.join('\n');
  },
});

const jobId = () => z.string().min(1).describe('The job_id that bash returned for the background job.');

export const jobOutputInput = () =>
  z.strictObject({
    job_id: jobId(),
    wait_seconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_JOB_WAIT_SECONDS)
      .default(0)
      .describe(
        'Wait up to this many seconds for the job to finish before answering. Default 0 (answer now).',
      ),
    offset: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Byte offset to read from. Omit to get what was printed since the previous job_output call.'),
  });

export const jobOutput = defineTool({
  name: 'job_output',
  // Jobs live in the memory of the process that started them.
  parity: false,
  family: 'core-shell',
  tag: 'primitive',
  description:
    'Read what a background job (bash with run_in_background) printed since the last read, with its status (running, exited, killed) and exit code. wait_seconds waits for it to finish first. Output over the limit keeps the newest part; pass offset to read older output.',
  input: jobOutputInput,
  mutates: false,
  surfaces: { mcp: 'svc_job_output' },
  run: async (ctx, input) =>
    ctx.app.ws.jobs.output(input.job_id, {
      sessionId: ctx.sessionId,
      offset: input.offset,
      waitSeconds: input.wait_seconds,
      maxBytes: ctx.app.config.options.bash.max_output_bytes,
      signal: ctx.signal,
    }),
  toModelOutput: renderJob,
});

export const jobKillInput = () => z.strictObject({ job_id: jobId() });

export const jobKill = defineTool({
  name: 'job_kill',
  family: 'core-shell',
  tag: 'primitive',
  description:
    'Stop a background job: its whole process group gets SIGTERM, then SIGKILL after 2 seconds. Returns its last output and final status. Stopping a job that already ended just reports it. Asks for approval.',
  input: jobKillInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  surfaces: { mcp: 'svc_job_kill' },
  run: async (ctx, input) =>
    ctx.app.ws.jobs.kill(input.job_id, {
      sessionId: ctx.sessionId,
      maxBytes: ctx.app.config.options.bash.max_output_bytes,
      ctx: opContext(ctx, 'job_kill'),
    }),
  toModelOutput: renderJob,
});

function renderJob(result: JobOutput): string {
  const status =
    result.status === 'running'
      ? 'still running'
      : result.status === 'killed'
        ? 'stopped'
        : `exited with code ${result.exit_code ?? '?'}`;
  const skipped = result.skipped_bytes
    ? `[${result.skipped_bytes} older bytes skipped; read them with offset ${result.offset}]\n`
    : '';
  const output = result.output.trimEnd() || '(no new output)';
  return `${skipped}${output}\n[job ${result.job_id} ${status}; next offset ${result.next_offset}]`;
}
