/**
 * The executor_reviewer pass: after a completed run of a session whose genome has `review_gate`,
 * a reviewer sub-agent (`options.adaptive_orchestration.reviewer_agent`, read-only `explore` by
 * default) checks the work; its verdict is a monitor signal and its findings join the executor's
 * next prompt. The task and the answer go to the reviewer only; the read models keep the verdict.
 * @module
 */
import type { ReviewStatus } from './store';

const TASK_MAX = 4000;
const ANSWER_MAX = 4000;
/** Findings kept for the executor's next prompt. */
export const FINDINGS_MAX = 4000;

export function reviewerPrompt(input: { task: string; answer: string; paths: string[] }): string {
  const clip = (text: string, max: number) =>
    text.length > max ? `${text.slice(0, max)}\n[… ${text.length - max} more characters]` : text;
  return [
    'You are the reviewer of an executor agent that has just finished a task in this workspace.',
    'Check its work with read-only tools: read the changed files, look for mistakes, missing pieces and untested paths. Do not change anything.',
    '',
    '<task>',
    clip(input.task.trim(), TASK_MAX),
    '</task>',
    '',
    '<executor_answer>',
    clip(input.answer.trim() || '(no final answer)', ANSWER_MAX),
    '</executor_answer>',
    '',
    input.paths.length
      ? `Files the executor changed: ${input.paths.slice(0, 50).join(', ')}`
      : 'The executor changed no files.',
    '',
    'Answer with a short list of findings, then one last line: "VERDICT: approve" when the work is complete and correct, or "VERDICT: changes_requested" when it must be fixed.',
  ].join('\n');
}

/** The verdict line of the reviewer's answer; no verdict counts as changes requested. */
export function parseVerdict(text: string): Extract<ReviewStatus, 'approved' | 'changes_requested'> {
  const matches = [...text.matchAll(/VERDICT:\s*(approve[d]?|changes[_ ]requested)/gi)];
  const last = matches.at(-1)?.[1]?.toLowerCase();
  return last?.startsWith('approve') ? 'approved' : 'changes_requested';
}

export function reviewPromptBlock(status: ReviewStatus, findings: string): string {
  const verdict = status === 'approved' ? 'approved' : 'changes requested';
  return [
    '# Reviewer pass on your previous run',
    `Verdict: ${verdict}.`,
    '<reviewer_findings>',
    findings.trim().slice(0, FINDINGS_MAX),
    '</reviewer_findings>',
    status === 'approved'
      ? 'Keep the reviewed behaviour intact.'
      : 'Address these findings before anything else in this turn, unless the user asks otherwise.',
  ].join('\n');
}
