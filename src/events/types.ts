/**
 * The session event catalog: every event type published on the bus, with its payload. This is a
 * contract between domains: the agent publishes, the SSE route, the TUI, `svc run --output
 * stream-json`, readouts (cognition, health follow-ons, adaptive monitor) and hooks subscribe.
 * Spec-named events keep their spec names; the rest follow noun.verb. Payloads carry metadata
 * only: never prompt text in lifecycle events, never secrets (deltas carry model output).
 * @module
 */
import type { FailureReport } from '../errors';

export interface SessionEventPayloads {
  'session.created': { session_id: string; parent_id: string | null; title: string };
  'session.updated': { session_id: string; changed: string[] };
  'session.deleted': { session_id: string };
  /** Agent state machine of the session. */
  'state.changed': {
    session_id: string;
    state: 'idle' | 'running' | 'cancelling' | 'compacting';
    run_id?: string;
  };
  'queue.changed': { session_id: string; length: number; items: { id: string; preview: string }[] };

  'run.started': {
    session_id: string;
    run_id: string;
    parent_run_id: string | null;
    family_session_id: string;
    agent: string;
    model: string;
    origin: string;
  };
  'run.finished': {
    session_id: string;
    run_id: string;
    status: 'completed' | 'failed' | 'cancelled' | 'interrupted';
    reason?: string;
    /** What failed, with the provider, the model and the next step (failed runs only). */
    failure?: FailureReport;
    steps: number;
    usage: { input_tokens: number; output_tokens: number };
    cost: number;
  };
  'message.created': { session_id: string; message_id: string; role: string; run_id?: string };
  /** Streaming model output. */
  'message.delta': {
    session_id: string;
    message_id: string;
    run_id: string;
    part: 'text' | 'reasoning';
    delta: string;
  };
  'message.completed': { session_id: string; message_id: string; run_id?: string };
  'tool.started': { session_id: string; run_id: string; tool_call_id: string; tool: string; title: string };
  'tool.finished': {
    session_id: string;
    run_id: string;
    tool_call_id: string;
    tool: string;
    is_error: boolean;
    duration_ms: number;
    /** Short, redacted summary for UIs (not the full output). */
    summary: string;
    /** A call refused by the operator, the headless rule, the bash rules or the sandbox. */
    failure?: FailureReport;
  };
  'permission.requested': {
    session_id: string;
    request_id: string;
    run_id?: string;
    tool: string;
    title: string;
    details?: Record<string, unknown>;
  };
  'permission.resolved': {
    session_id: string;
    request_id: string;
    tool: string;
    decision: 'allow_once' | 'allow_session' | 'deny';
    by: string;
  };
  /** Context-window usage after each model step: the source of `health.token_pressure`. */
  'context.usage': {
    session_id: string;
    run_id: string;
    input_tokens: number;
    context_window: number;
    ratio: number;
  };
  'loop.detected': { session_id: string; run_id: string; tool: string; repeats: number };
  'compaction.started': {
    session_id: string;
    run_id?: string;
    reason: 'auto' | 'manual' | 'health_followon';
  };
  'compaction.finished': {
    session_id: string;
    summary_message_id: string;
    tokens_before: number;
    tokens_after: number;
  };
  'file.changed': {
    session_id: string;
    run_id?: string;
    tool: string;
    path: string;
    change: 'create' | 'modify' | 'delete';
  };
  'workflow.phase_changed': { session_id: string; phase: string; previous: string };
  'plan.updated': { session_id: string; has_plan: boolean };
  /** spec, Events: published when token-per-minute recovery crosses a provider boundary. */
  /** A session asked the holder of a claim to release it (workspace_claim negotiate). */
  'claim.negotiation_requested': {
    session_id: string;
    claim_id: string;
    negotiation_id: string;
    from_session_id: string;
  };
  /** The runtime recorded a recommendation for the operator (operator cognition ledger). */
  'recommendation.recorded': { session_id: string; recommendation_id: string; zone: string; kind: string };
  /** A finding of the finding lifecycle changed state (`from` null: it was opened). */
  'finding.changed': {
    session_id: string;
    finding_id: string;
    kind: 'check' | 'diagnostic' | 'reported';
    from: 'open' | 'acknowledged' | 'fixed' | 'waived' | 'stale' | null;
    to: 'open' | 'acknowledged' | 'fixed' | 'waived' | 'stale';
    reason: string;
    run_id?: string;
  };
  /** A run's file changes were grouped into an edit capsule at run end (`options.edit_capsules`). */
  'edit_capsule.created': {
    session_id: string;
    capsule_id: string;
    run_id: string;
    files: number;
    additions: number;
    deletions: number;
    checkpoint_id: string | null;
  };
  'edit_capsule.reverted': {
    session_id: string;
    capsule_id: string;
    run_id: string;
    files: number;
    by_session_id?: string;
  };
  /**
   * Adaptive orchestration (spec, Events; publisher: src/adaptive/service.ts). Published after
   * the state is committed and the prompt trace assembled; replay serves the same payloads.
   * `changed` is a refresh signal only (when the session has a genome snapshot).
   */
  'adaptive_orchestration.changed': {
    type: 'adaptive_orchestration.changed';
    session_id: string;
    action: 'updated';
  };
  /** The full adaptive snapshot (`posture` included), as `get_adaptive_orchestration` returns it. */
  'adaptive_orchestration.genome': AdaptiveSnapshotPayload;
  /** A monitor evaluation of a session without an effective genome. */
  'adaptive_orchestration.monitor_evaluation': {
    type: 'adaptive_orchestration.monitor_evaluation';
    session_id: string;
    action: 'monitor_evaluation';
    posture: Record<string, unknown>;
    last_monitor_evaluation: Record<string, unknown> | undefined;
  };
  /** Reshape-related changes only: the snapshot plus what happened to the reshape. */
  'adaptive_orchestration.reshape': AdaptiveSnapshotPayload & {
    reshape_action: 'recorded' | 'queued' | 'applied' | 'blocked' | 'cleared';
  };
  /**
   * The health.token_pressure signal fired (context usage reached
   * `options.health_followons.token_pressure_threshold`). Published only with
   * `options.health_followons.emit_declarative_events`.
   */
  'health.token_pressure': {
    session_id: string;
    run_id: string;
    ratio: number;
    threshold: number;
    input_tokens: number;
    context_window: number;
  };
  /**
   * spec, Events → health_followon.activation: a token-pressure activation ran. Exactly these
   * keys; published only when all five gates hold (src/health/followons.ts). No MCP mirror; not
   * part of the genome contract.
   */
  'health_followon.activation': {
    type: 'health_followon.activation';
    session_id: string;
    signal: 'token_pressure';
    activation_rule_id: string;
    outcome: 'dispatched' | 'skipped';
    actions_planned: number;
    activation_actions_run: number;
    reason?: string;
  };
  'provider_recovery.changed': {
    session_id: string;
    run_id?: string;
    from: string;
    to: string;
    reason: string;
    attempt: number;
  };
}

export type SessionEventType = keyof SessionEventPayloads;

/** The adaptive snapshot as an event payload (its full shape: src/adaptive/snapshot.ts). */
export interface AdaptiveSnapshotPayload {
  session_id: string;
  action: 'updated' | 'cleared' | 'monitor_evaluation' | 'unknown';
  posture: Record<string, unknown>;
  [field: string]: unknown;
}
