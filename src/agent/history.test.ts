/**
 * Stored messages → model messages. Pins the repairs that keep a crashed or cancelled session
 * sendable: a call without a result gets an "interrupted" error result, a result without its call
 * is dropped, empty assistant messages are skipped, a summary becomes a user message.
 */
import { describe, expect, it } from 'vitest';
import type { Message, MessagePart } from '../sessions/session-store';
import { INTERRUPTED_RESULT, SUMMARY_PREFIX, toModelMessages } from './history';

let n = 0;
const message = (role: Message['role'], parts: MessagePart[]): Message => ({
  id: `msg_${++n}`,
  session_id: 's',
  role,
  parts,
  model: null,
  provider: null,
  usage: null,
  cost: 0,
  run_id: null,
  created_at: n,
  updated_at: n,
  finished_at: n,
});

describe('toModelMessages', () => {
  it('closes tool calls that never got a result and drops results without a call', () => {
    const out = toModelMessages([
      message('user', [{ type: 'text', text: 'go' }]),
      message('assistant', [
        { type: 'text', text: 'reading' },
        { type: 'tool-call', tool_call_id: 'a', tool: 'view', input: { path: 'x' } },
        { type: 'tool-call', tool_call_id: 'b', tool: 'view', input: { path: 'y' } },
      ]),
      message('tool', [
        { type: 'tool-result', tool_call_id: 'a', tool: 'view', output: 'x content' },
        { type: 'tool-result', tool_call_id: 'zzz', tool: 'view', output: 'orphan' },
      ]),
      message('assistant', []),
      message('assistant', [
        { type: 'tool-call', tool_call_id: 'c', tool: 'bash', input: { command: 'ls' } },
      ]),
      message('user', [{ type: 'text', text: 'again' }]),
    ]);
    expect(out).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'reading' },
          { type: 'tool-call', toolCallId: 'a', toolName: 'view', input: { path: 'x' } },
          { type: 'tool-call', toolCallId: 'b', toolName: 'view', input: { path: 'y' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'a',
            toolName: 'view',
            output: { type: 'text', value: 'x content' },
          },
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'view',
            output: { type: 'error-text', value: INTERRUPTED_RESULT },
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'bash', input: { command: 'ls' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c',
            toolName: 'bash',
            output: { type: 'error-text', value: INTERRUPTED_RESULT },
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'again' }] },
    ]);
  });

  it('turns a compaction summary into a user message and keeps error results as errors', () => {
    const out = toModelMessages([
      message('system', [{ type: 'text', text: 'the summary' }]),
      message('assistant', [{ type: 'tool-call', tool_call_id: 'a', tool: 'edit', input: {} }]),
      message('tool', [
        { type: 'tool-result', tool_call_id: 'a', tool: 'edit', output: 'forbidden: no', is_error: true },
      ]),
    ]);
    expect(out[0]).toEqual({
      role: 'user',
      content: `${SUMMARY_PREFIX} None of it is the user's own words.\n\nthe summary\n\nContinue from here.`,
    });
    expect(out[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'a',
          toolName: 'edit',
          output: { type: 'error-text', value: 'forbidden: no' },
        },
      ],
    });
  });
});
