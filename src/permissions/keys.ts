/**
 * The permission keys: one set for every surface that answers a permission request from the
 * keyboard (the TUI dialog, `svc attach`, the terminal of `svc run`), a single keypress each,
 * shown the same way. ACP clients show their own buttons; svc names the options with the same
 * labels. Documented in docs/permissions.md ("Permission keys").
 * @module
 */
import type { PermissionDecision } from './permission-service';

export interface PermissionKey {
  decision: PermissionDecision;
  /** The single key that answers it (lower case; upper case works too). */
  key: string;
  label: string;
  /** The label on a narrow terminal. */
  short: string;
}

export const PERMISSION_KEYS: readonly PermissionKey[] = [
  { decision: 'allow_once', key: 'y', label: 'allow once', short: 'once' },
  { decision: 'allow_session', key: 's', label: 'allow for this session', short: 'session' },
  { decision: 'deny', key: 'n', label: 'deny', short: 'deny' },
];

/** The label of a decision, as every surface shows it. */
export function permissionLabel(decision: PermissionDecision): string {
  return PERMISSION_KEYS.find((k) => k.decision === decision)?.label ?? decision;
}

/**
 * The decision one keypress means, or undefined for any other key. Escape and Ctrl-C deny (a
 * request is never approved by a key that is not one of the allow keys).
 */
export function decisionForKey(input: string): PermissionDecision | undefined {
  if (input === '\u001b' || input === '\u0003') return 'deny';
  const key = input.toLowerCase();
  return PERMISSION_KEYS.find((k) => k.key === key)?.decision;
}

/** The choices as every surface writes them: `[y] allow once  [s] allow for this session  [n] deny`. */
export function permissionChoices(narrow = false): string {
  return PERMISSION_KEYS.map((k) => `[${k.key}] ${narrow ? k.short : k.label}`).join('  ');
}
