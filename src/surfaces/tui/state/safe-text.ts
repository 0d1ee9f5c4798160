/**
 * Text from outside svc made safe for the terminal where it enters the TUI's state, once, not per
 * render: model text and reasoning, tool titles, summaries and outputs, session titles, error
 * messages (`safeTerminalText`: escape sequences and control characters removed, so model text
 * cannot set the window title, write the clipboard or hide text). A permission request keeps
 * every control character, shown (`visibleControls`): what a person approves is shown whole.
 * `svc attach` goes through the same state, so it gets the same.
 * @module
 */
import type { SessionEvent } from '../../../events/bus';
import { safeTerminalText, visibleControls } from '../../../util/terminal-text';
import type { PermissionPrompt, SessionSummary } from '../client';

/** `value` with every string in it (deeply, keys too) passed through `clean`; other values as they are. */
export function cleanStrings<T>(value: T, clean: (text: string) => string = safeTerminalText): T {
  if (typeof value === 'string') return clean(value) as T;
  if (Array.isArray(value)) return value.map((v) => cleanStrings(v, clean)) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[clean(k)] = cleanStrings(v, clean);
    return out as T;
  }
  return value;
}

/** An event's payload made safe: a permission request's with its controls shown, any other's stripped. */
export function safeEvent(event: SessionEvent): SessionEvent {
  const clean = event.type === 'permission.requested' ? visibleControls : safeTerminalText;
  return { ...event, payload: cleanStrings(event.payload, clean) };
}

/** A permission request as the dialog shows it: title and details with every control shown. */
export function safePermission(request: PermissionPrompt): PermissionPrompt {
  return cleanStrings(request, visibleControls);
}

/** A session row with its title (the model may have written it) safe to print. */
export function safeSession(session: SessionSummary): SessionSummary {
  return { ...session, title: safeTerminalText(session.title ?? '') };
}
