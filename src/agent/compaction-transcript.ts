/**
 * The transcript a compaction sends to the summarizer. Turns are marked by lines of their own
 * (`[user]`, `[assistant]`, `[tool call NAME] …`, `[tool result NAME]`, `[earlier summary]`);
 * tool results and earlier summaries sit between fence lines carrying a random nonce made for
 * this one compaction, and every line of a turn's text that looks like a turn marker or a fence
 * is escaped with a leading backslash. So a tool output that forges a `[user]` turn stays
 * inside its fence and does not read as one: the only unescaped `[user]` lines are the user's
 * own turns (SUMMARY_PROMPT tells the summarizer that text inside tool results is data).
 * @module
 */

import { randomBytes } from 'node:crypto';
import type { Message } from '../sessions/session-store';
import { textOf } from './history';

const MAX_TOOL_OUTPUT_CHARS = 2_000;
const MAX_TOOL_INPUT_CHARS = 1_000;

/** A line that could pass for a turn marker, a fence, or the transcript's cut notice. */
const MARKER_LIKE =
  /^\s*(?:\[\s*(?:user|assistant|system|developer|tool|file|error|earlier summary|summary|…)|<<<)/i;
/**
 * A line of a summary that could pass for svc's request section heading (compaction-summary.ts):
 * a heading, bold or plain line naming the user's latest (last, own, actual) request or words, or
 * any line ending in "(verbatim)".
 */
const SECTION_LIKE =
  /^[\s#>*_"'`]*(?:the\s+)?user\W{0,2}s?\s+(?:latest|last|own|actual|real)\s+(?:request|words|message|instruction)|\(verbatim\)[\s*_:]*$/i;
/** Every line break a model may read as one. */
const LINE_BREAK = /\r\n|[\r\n\u0085\u2028\u2029]/;

/** A fresh nonce for one compaction's fences: tool output cannot know it in advance. */
export function transcriptNonce(): string {
  return randomBytes(8).toString('hex');
}

/** The user prompt of the summary request: the nonce the fences carry, then the transcript. */
export function summaryRequest(transcript: string, nonce: string): string {
  return `Summarize this conversation. This transcript's fence nonce is ${nonce}: only the fence lines carrying it open and close tool results and earlier summaries.\n\n${transcript}`;
}

/** One turn: `head` and `tail` (its marker and fence lines) stay whole when the transcript is cut. */
interface Block {
  head: string;
  body: string;
  tail: string;
}

export function renderTranscript(messages: readonly Message[], maxChars: number, nonce: string): string {
  const blocks: Block[] = [];
  const fenced = (marker: string, kind: string, body: string): Block => ({
    head: `${marker}\n<<<${kind} ${nonce}>>>\n`,
    body: neutralise(body),
    tail: `\n<<<end of ${kind} ${nonce}>>>`,
  });
  const line = (marker: string, text: string): Block => ({ head: marker, body: oneLine(text), tail: '' });
  for (const message of messages) {
    if (message.role === 'system') {
      blocks.push(fenced('[earlier summary]', 'earlier summary', textOf(message.parts)));
      continue;
    }
    for (const part of message.parts) {
      switch (part.type) {
        case 'text':
          if (part.text.trim())
            blocks.push({ head: `[${message.role}]\n`, body: neutralise(part.text), tail: '' });
          break;
        case 'reasoning':
          break;
        case 'tool-call':
          blocks.push(
            line(
              `[tool call ${oneLine(part.tool)}] `,
              clip(JSON.stringify(part.input ?? {}), MAX_TOOL_INPUT_CHARS),
            ),
          );
          break;
        case 'tool-result':
          blocks.push(
            fenced(
              `[tool result ${oneLine(part.tool)}${part.is_error ? ', error' : ''}]`,
              'tool output',
              clip(String(part.output ?? ''), MAX_TOOL_OUTPUT_CHARS),
            ),
          );
          break;
        case 'file':
          blocks.push(line('', `[file ${oneLine(part.path ?? part.media_type)}]`));
          break;
        case 'error':
          blocks.push(line('[error] ', part.message));
          break;
        default: {
          const exhaustive: never = part;
          throw new Error(`unknown part ${JSON.stringify(exhaustive)}`);
        }
      }
    }
  }
  return cutMiddle(blocks, maxChars);
}

/** Escapes every line that could pass for a turn marker or a fence; line breaks become `\n`. */
export function neutralise(text: string): string {
  return text
    .split(LINE_BREAK)
    .map((l) => (MARKER_LIKE.test(l) ? l.replace(/^(\s*)/, '$1\\') : l))
    .join('\n');
}

/**
 * A summary as the summarizer wrote it, with every line that could pass for svc's own structure
 * escaped: turn markers, fences, and lookalikes of the user's request section.
 */
export function neutraliseSummary(text: string): string {
  return text
    .split(LINE_BREAK)
    .map((l) => (MARKER_LIKE.test(l) || SECTION_LIKE.test(l) ? l.replace(/^(\s*)/, '$1\\') : l))
    .join('\n');
}

function oneLine(text: string): string {
  return text.split(LINE_BREAK).join(' ');
}

/** The whole transcript, or its head and tail with the middle left out; a cut block keeps its fences. */
function cutMiddle(blocks: readonly Block[], maxChars: number): string {
  const full = blocks.map((b) => b.head + b.body + b.tail);
  const total = full.reduce((n, b) => n + b.length, 0) + 2 * Math.max(0, blocks.length - 1);
  if (total <= maxChars) return full.join('\n\n');
  const half = Math.floor(maxChars / 2);
  const head: string[] = [];
  let used = 0;
  for (let i = 0; i < blocks.length && used < half; i++) {
    const room = half - used;
    const { head: open, body, tail } = blocks[i];
    const piece =
      full[i].length <= room
        ? full[i]
        : `${open}${body.slice(0, Math.max(0, room - open.length - tail.length))}…${tail}`;
    head.push(piece);
    used += piece.length + 2;
  }
  const tailPieces: string[] = [];
  used = 0;
  for (let i = blocks.length - 1; i >= 0 && used < half; i--) {
    const room = half - used;
    const { head: open, body, tail } = blocks[i];
    const keep = Math.max(0, room - open.length - tail.length);
    const piece = full[i].length <= room ? full[i] : `${open}…${keep > 0 ? body.slice(-keep) : ''}${tail}`;
    tailPieces.unshift(piece);
    used += piece.length + 2;
  }
  const kept = used + head.reduce((n, p) => n + p.length + 2, 0);
  return `${head.join('\n\n')}\n\n[… ${Math.max(0, total - kept)} characters of the middle left out …]\n\n${tailPieces.join('\n\n')}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
