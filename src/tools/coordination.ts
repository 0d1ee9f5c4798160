/**
 * Coordination tools: `workspace_claim` (acquire, renew, release, list, negotiate) and
 * `leave_marker` (create, list, delete). Soft claims are advisory; hard claims block overlapping
 * mutation tools of other sessions (enforced by the hard-claim mutation guard).
 * @module
 */
import { z } from 'zod';
import { MARKER_KINDS } from '../coordination/markers';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool, type ToolContext } from './core/define-tool';

const sessionIdField = () =>
  sessionIdInput(
    'context',
    'Session that holds the claim or leaves the marker. Omit inside an agent run: the current session is used.',
  );

export const workspaceClaimInput = () =>
  z.strictObject({
    action: z.enum(['acquire', 'renew', 'release', 'list', 'negotiate']).describe('What to do.'),
    session_id: sessionIdField(),
    paths: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'acquire: workspace paths to claim; a directory ends with / and covers everything under it; . is the whole workspace.',
      ),
    mode: z
      .enum(['soft', 'hard'])
      .default('soft')
      .describe('soft: advisory; hard: other sessions cannot mutate these paths.'),
    ttl_seconds: z
      .number()
      .int()
      .min(10)
      .max(86_400)
      .default(900)
      .describe('acquire/renew: seconds until the claim expires.'),
    reason: z.string().max(200).optional().describe('Why the claim is needed; shown to other sessions.'),
    claim_id: z.string().min(1).optional().describe('renew/release/negotiate: the claim.'),
    message: z.string().max(500).optional().describe('negotiate: what you ask of the holder.'),
    include_inactive: z.boolean().default(false).describe('list: include released and expired claims.'),
  });

async function sessionOf(ctx: ToolContext, given: string | undefined, action: string): Promise<string> {
  // The calling run's session counts as named: claims and markers need a session that exists.
  return (
    await resolveSession(
      ctx.app,
      { session_id: given ?? ctx.sessionId },
      {
        onMissing: 'required',
        required: `session_id: required for ${action} (claims and markers belong to a session)`,
      },
    )
  ).session_id;
}

function need<T>(value: T | undefined, field: string, action: string): T {
  if (value === undefined) throw new SvcError('invalid_input', `${field}: required for action ${action}`);
  return value;
}

export const workspaceClaim = defineTool({
  name: 'workspace_claim',
  family: 'coordination',
  tag: 'primitive',
  description:
    "Claim workspace paths so other sessions know you are working there. soft claims are advisory; hard claims make other sessions' file edits and writes on those paths fail until you release the claim or it expires. Actions: acquire, renew, release, list, negotiate (ask the holder of a claim to release it).",
  input: workspaceClaimInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_workspace_claim',
    cli: { command: 'claims list', fixed: { action: 'list' }, description: 'active workspace claims' },
  },
  examples: [{ action: 'list' }],
  async run(ctx, input) {
    const claims = ctx.app.claims;
    switch (input.action) {
      case 'acquire': {
        const session_id = await sessionOf(ctx, input.session_id, 'acquire');
        const { claim, overlapping } = await claims.acquire({
          session_id,
          paths: need(input.paths, 'paths', 'acquire'),
          mode: input.mode,
          ttl_seconds: input.ttl_seconds,
          reason: input.reason,
        });
        const warnings = overlapping.map(
          (c) =>
            `overlaps ${c.mode} claim ${c.claim_id} of session ${c.session_id} on ${c.paths.join(', ')} (advisory)`,
        );
        return { action: 'acquire', claim, warnings };
      }
      case 'renew':
        return {
          action: 'renew',
          claim: await claims.renew({
            session_id: await sessionOf(ctx, input.session_id, 'renew'),
            claim_id: need(input.claim_id, 'claim_id', 'renew'),
            ttl_seconds: input.ttl_seconds,
          }),
        };
      case 'release':
        return {
          action: 'release',
          claim: await claims.release({
            session_id: await sessionOf(ctx, input.session_id, 'release'),
            claim_id: need(input.claim_id, 'claim_id', 'release'),
            reason: input.reason,
          }),
        };
      case 'list': {
        const list = await claims.list({
          session_id: input.session_id,
          include_inactive: input.include_inactive,
        });
        return { action: 'list', count: list.length, claims: list };
      }
      case 'negotiate':
        return {
          action: 'negotiate',
          ...(await claims.negotiate({
            session_id: await sessionOf(ctx, input.session_id, 'negotiate'),
            claim_id: need(input.claim_id, 'claim_id', 'negotiate'),
            message: input.message,
          })),
        };
      default: {
        const never: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${never}`);
      }
    }
  },
});

export const leaveMarkerInput = () =>
  z.strictObject({
    action: z.enum(['create', 'list', 'delete']).describe('What to do.'),
    session_id: sessionIdField(),
    path: z
      .string()
      .min(1)
      .optional()
      .describe('create: the path the marker is about; list: only markers overlapping this path.'),
    kind: z
      .enum(MARKER_KINDS)
      .default('note')
      .describe('create: note, todo, warning, handoff or in_progress.'),
    message: z.string().max(2000).optional().describe('create: the note other sessions will read.'),
    ttl_seconds: z
      .number()
      .int()
      .min(10)
      .max(30 * 86_400)
      .optional()
      .describe('create: seconds until the marker expires; omit to keep it.'),
    marker_id: z.string().min(1).optional().describe('delete: the marker.'),
  });

export const leaveMarker = defineTool({
  name: 'leave_marker',
  family: 'coordination',
  tag: 'primitive',
  description:
    'Leave a note on a workspace path for other sessions and agents (a handoff, a warning, work in progress), list the markers on a path, or delete one.',
  input: leaveMarkerInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_leave_marker',
    cli: { command: 'markers list', fixed: { action: 'list' }, description: 'workspace markers' },
  },
  examples: [{ action: 'list' }],
  async run(ctx, input) {
    const markers = ctx.app.markers;
    switch (input.action) {
      case 'create':
        return {
          action: 'create',
          marker: await markers.create({
            session_id: await sessionOf(ctx, input.session_id, 'create'),
            path: need(input.path, 'path', 'create'),
            kind: input.kind,
            message: need(input.message, 'message', 'create'),
            ttl_seconds: input.ttl_seconds,
          }),
        };
      case 'list': {
        const list = await markers.list({ path: input.path, session_id: input.session_id });
        return { action: 'list', count: list.length, markers: list };
      }
      case 'delete':
        return {
          action: 'delete',
          marker: await markers.delete({ marker_id: need(input.marker_id, 'marker_id', 'delete') }),
        };
      default: {
        const never: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${never}`);
      }
    }
  },
});
