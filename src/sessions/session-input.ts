/**
 * The one `session_id` input field. What an omitted id means is the tool's policy (the same names
 * as `resolveSession`'s `onMissing`), and the field's description says it, so the model, the MCP
 * schema, the CLI help and the OpenAPI document all read the same rule.
 * @module
 */
import { z } from 'zod';
import type { MissingSession } from './resolve-session';

const DESCRIPTIONS: Record<MissingSession, string> = {
  required: 'Session id.',
  current: 'Session id. Omit for the session you run in (agent) or the current session.',
  'client-current': 'Session id. Omit for the current session.',
  context: 'Session id. Omit for the current session (the tool-context or MCP-bound session).',
  'context-or-none': 'Session id. Omit for the session you run in, or none outside a session.',
  'most-recent': 'Session id. Omit for the current or most recent session.',
  none: 'Session id. Omit for every session.',
};

/** `session_id`: a non-empty id, optional unless the policy is `required`. */
export function sessionIdInput(policy: 'required', description?: string): z.ZodString;
export function sessionIdInput(
  policy: Exclude<MissingSession, 'required'>,
  description?: string,
): z.ZodOptional<z.ZodString>;
export function sessionIdInput(
  policy: MissingSession,
  description?: string,
): z.ZodString | z.ZodOptional<z.ZodString> {
  const field = z.string().min(1);
  const text = description ?? DESCRIPTIONS[policy];
  return policy === 'required' ? field.describe(text) : field.optional().describe(text);
}
