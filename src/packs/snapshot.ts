/**
 * The operating-mode snapshot (spec, Operating mode snapshot): its schema, and how the stored row
 * becomes one. Metadata only: the schema is strict, so a field that could carry preamble text,
 * a hook command or a raw policy cannot be added by accident.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import { lazy } from '../util/lazy';
import type { PackDiagnostic } from './manifest';
import { EMPTY_SUMMARY, LAST_ACTIONS, type PackRow, packSummarySchema } from './store';

/** spec, States and transitions → Operating mode `state` values. */
export const OPERATING_MODE_STATES = [
  'enabled_inactive',
  'active',
  'validation_failed',
  'persistence_unavailable',
  'hydration_failed',
  'approval_required',
  'disabled',
  'mutation_unavailable',
  'unavailable',
] as const;
export type OperatingModeState = (typeof OPERATING_MODE_STATES)[number];

/** Only `svc config show-operating-mode` may report these; every other surface fails closed. */
export const CLI_ONLY_STATES: readonly OperatingModeState[] = ['disabled', 'unavailable'];

export const operatingModeSnapshotSchema = lazy(() =>
  z.strictObject({
    session_id: z.string(),
    enabled: z.boolean(),
    state: z.enum(OPERATING_MODE_STATES),
    active_operating_pack: z.string(),
    operating_mode_preset_id: z.string(),
    pack_manifest_path: z.string().min(1).optional(),
    last_action: z.enum(LAST_ACTIONS).optional(),
    unavailable_reason: z.string().min(1).optional(),
    diagnostics: z.array(
      z.strictObject({
        section: z.string(),
        field: z.string(),
        level: z.enum(['error', 'warning']),
        message: z.string(),
      }),
    ),
    last_evidence_at: z.iso.datetime(),
    ...packSummarySchema().shape,
  }),
);
export type OperatingModeSnapshot = z.infer<ReturnType<typeof operatingModeSnapshotSchema>>;

/** States whose snapshot carries `unavailable_reason` (spec: disabled, unavailable, validation, persistence, hydrate failure). */
const REASON_STATES: readonly OperatingModeState[] = [
  'disabled',
  'unavailable',
  'validation_failed',
  'persistence_unavailable',
  'hydration_failed',
  'approval_required',
];

export interface SnapshotInput {
  session_id: string;
  enabled: boolean;
  state: OperatingModeState;
  row?: PackRow;
  reason?: string;
  diagnostics?: PackDiagnostic[];
  evidence_at: number;
}

export function buildSnapshot(input: SnapshotInput, redactor: Redactor): OperatingModeSnapshot {
  const row = input.row;
  // A pack is in force unless its hydration failed or it changed since it was approved; a failed
  // activation keeps the previous pack.
  const inForce =
    row?.active === true &&
    row.failure_state !== 'hydration_failed' &&
    row.failure_state !== 'approval_required';
  const summary = inForce ? row.summary : EMPTY_SUMMARY;
  const reason = REASON_STATES.includes(input.state) ? input.reason || row?.failure_reason : undefined;
  const snapshot: OperatingModeSnapshot = {
    session_id: input.session_id,
    enabled: input.enabled,
    state: input.state,
    active_operating_pack: inForce ? row.pack_name : '',
    operating_mode_preset_id: row?.active ? row.preset_id : '',
    ...(row?.active && row.manifest_path ? { pack_manifest_path: row.manifest_path } : {}),
    ...(row?.last_action ? { last_action: row.last_action } : {}),
    ...(reason ? { unavailable_reason: redactor.string(reason) } : {}),
    diagnostics: (input.diagnostics ?? row?.diagnostics ?? []).map((d) => ({
      section: redactor.string(d.section),
      field: redactor.string(d.field),
      level: d.level,
      message: redactor.string(d.message),
    })),
    last_evidence_at: new Date(input.evidence_at).toISOString(),
    skills: summary.skills.map((s) => redactor.string(s)),
    hook_count: summary.hook_count,
    policy_rules: summary.policy_rules,
    task_rules: summary.task_rules,
    skill_rules: summary.skill_rules,
    choreography: summary.choreography,
    has_prompt_preamble: summary.has_prompt_preamble,
  };
  // The parity contract: what leaves here is exactly the spec's shape, or nothing.
  const checked = operatingModeSnapshotSchema().safeParse(snapshot);
  if (!checked.success) {
    throw new SvcError(
      'internal',
      `operating mode snapshot cannot be serialized: ${checked.error.issues[0]?.path.join('.') || 'shape'} is invalid`,
      { status: 400, details: { session_id: input.session_id, reason: 'serialization' } },
    );
  }
  return checked.data;
}

/**
 * The CLI posture of a runtime built without a session pack controller: `disabled` when the gate
 * is off, else `unavailable` (the other surfaces answer 503 instead).
 */
export function controllerlessPosture(
  input: { session_id: string; enabled: boolean; now: number },
  redactor: Redactor,
): OperatingModeSnapshot {
  return buildSnapshot(
    {
      session_id: input.session_id,
      enabled: input.enabled,
      state: input.enabled ? 'unavailable' : 'disabled',
      reason: input.enabled
        ? 'this runtime has no session pack controller (no operating-mode parity)'
        : 'options.operating_packs is false; set it to true to use operating packs',
      evidence_at: input.now,
    },
    redactor,
  );
}
