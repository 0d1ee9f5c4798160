/** The pure svc ⇄ ACP translations. */
import { describe, expect, it } from 'vitest';
import {
  llmProtocol,
  markdownPlan,
  promptText,
  stopReason,
  todoPlan,
  toolKind,
  toolLocations,
} from '../../src/surfaces/acp/mapping';

describe('ACP mapping', () => {
  it('turns prompt blocks into prompt text, embedded files included', () => {
    expect(
      promptText([
        { type: 'text', text: 'fix it' },
        { type: 'resource', resource: { uri: 'file:///w/a.ts', text: 'const a = 1;' } },
        { type: 'resource_link', name: 'b.ts', uri: 'file:///w/b.ts' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ]),
    ).toBe(
      'fix it\n\n<context uri="file:///w/a.ts">\nconst a = 1;\n</context>\n\n[b.ts](file:///w/b.ts)\n\n[image content is not supported by svc and was left out]',
    );
  });

  it('maps tools to kinds and file tools to absolute locations', () => {
    expect(toolKind('edit')).toBe('edit');
    expect(toolKind('bash')).toBe('execute');
    expect(toolKind('mcp_x_y')).toBe('other');
    expect(toolLocations('view', 'view src/a.ts', '/w')).toEqual([{ path: '/w/src/a.ts' }]);
    expect(toolLocations('bash', 'bash ls', '/w')).toEqual([]);
  });

  it('maps run outcomes to stop reasons (failures are errors)', () => {
    expect(stopReason({ status: 'completed', reason: null })).toBe('end_turn');
    expect(stopReason({ status: 'cancelled', reason: null })).toBe('cancelled');
    expect(stopReason({ status: 'interrupted', reason: null })).toBe('cancelled');
    expect(stopReason({ status: 'failed', reason: 'max_steps' })).toBe('max_turn_requests');
    expect(stopReason({ status: 'failed', reason: null })).toBeUndefined();
  });

  it('reads plans from the todo list and from plan markdown', () => {
    expect(
      todoPlan([
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress', active_form: 'Doing b' },
        { content: 'c', status: 'cancelled' },
      ]),
    ).toEqual([
      { content: 'a', priority: 'medium', status: 'completed' },
      { content: 'Doing b', priority: 'medium', status: 'in_progress' },
    ]);
    expect(markdownPlan('# Plan\n\n1. read\n2. edit\n- [x] done\ntext')).toEqual([
      { content: 'read', priority: 'medium', status: 'pending' },
      { content: 'edit', priority: 'medium', status: 'pending' },
      { content: 'done', priority: 'medium', status: 'completed' },
    ]);
  });

  it('names wire protocols, custom ones with a leading underscore', () => {
    expect(llmProtocol('openai-compat')).toBe('openai');
    expect(llmProtocol('amazon-bedrock')).toBe('bedrock');
    expect(llmProtocol('google')).toBe('_google');
  });
});
