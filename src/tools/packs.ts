/**
 * Operating pack tools (family `packs`): `get_operating_mode`, `session_set_pack`,
 * `session_clear_pack`, `session_list_packs`, `session_get_active_pack`. All five are registered
 * only when `options.operating_packs` is true and the runtime has a session pack controller
 * (TOOLS-41). The three operating-mode tools carry the `/v1/session-operating-mode` routes;
 * `get_operating_mode` also carries MCP `svc_get_operating_mode` and the CLI
 * `svc config show-operating-mode` (which runs with the gate off and is the only surface that
 * reports the `disabled` and `unavailable` states).
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { PackController } from '../packs/controller';
import { discoverPacks } from '../packs/discovery';
import { controllerlessPosture, type OperatingModeSnapshot } from '../packs/snapshot';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { printable } from '../util/terminal-text';
import {
  type AnyTool,
  defineTool,
  type GateEnv,
  type HttpBinding,
  type ToolContext,
} from './core/define-tool';
import type { ToolHost } from './core/types';

const sessionIdField = () => sessionIdInput('context');

export const getOperatingModeInput = () => z.strictObject({ session_id: sessionIdField() });

export const sessionSetPackInput = () =>
  z.strictObject({
    session_id: sessionIdField(),
    pack_path_or_name: z
      .string()
      .min(1)
      .max(4096)
      .describe(
        'What to activate: a preset id from options.operating_mode_presets, a path to a pack.toml (or its folder), or a pack name from session_list_packs.',
      ),
  });

export const sessionClearPackInput = () => z.strictObject({ session_id: sessionIdField() });
export const sessionListPacksInput = () => z.strictObject({});
export const sessionGetActivePackInput = () => z.strictObject({ session_id: sessionIdField() });

/** TOOLS-41: the gate and a session pack controller. */
function packsGate({ app }: GateEnv): true | string {
  if (app.config.options.operating_packs !== true) return 'options.operating_packs is false';
  return app.packs ? true : 'no session pack controller in this runtime';
}

/**
 * spec, Errors → Operating mode routes: with the gate off the route is a plain-text 404 (the
 * adapter's default for an unregistered tool); with the gate on but no controller (no parity
 * interface) it is 503. Unknown sessions and packs are a failed request: 400.
 */
const route = {
  path: '/v1/session-operating-mode',
  errors: 'text',
  statusFor: { not_found: 400 },
  unregistered: (app: ToolHost) =>
    app.config.options.operating_packs === true && !app.packs
      ? new SvcError('unavailable', 'operating-mode parity is not available in this runtime')
      : undefined,
} satisfies Omit<HttpBinding, 'method'>;

function controller(ctx: ToolContext): PackController {
  const packs = ctx.app.packs;
  if (!packs) {
    throw new SvcError(
      'unavailable',
      'this runtime has no session pack controller (no operating-mode parity)',
    );
  }
  return packs;
}

/** The session named, else the tool-context (MCP-bound) one; an unknown one the controller reports. */
async function sessionOf(ctx: ToolContext, input: { session_id?: string }): Promise<string> {
  return (
    await resolveSession(ctx.app, input, {
      onMissing: 'context',
      context: ctx.sessionId,
      onUnknown: 'unchecked',
    })
  ).session_id;
}

export const getOperatingMode = defineTool({
  name: 'get_operating_mode',
  family: 'packs',
  tag: 'primitive',
  description:
    'Read the session operating mode: whether operating packs are enabled, the state, the active pack and preset, diagnostics and a metadata-only summary of the pack (skills, hook and rule counts, choreography). Read-only.',
  input: getOperatingModeInput,
  mutates: false,
  gate: packsGate,
  surfaces: {
    http: { method: 'GET', ...route },
    mcp: 'svc_get_operating_mode',
    cli: {
      command: 'config show-operating-mode',
      description: 'operating packs: the gate, discovered packs, preset ids and the posture',
      ungated: true,
      envelope: (posture: OperatingModeSnapshot, { app }) => cliEnvelope(app, posture),
      text: renderCliPosture,
    },
  },
  examples: [{ session_id: 'ses_0001' }],
  async run(ctx, input) {
    // spec, States: disabled and unavailable come only from svc config show-operating-mode;
    // every other surface fails closed (the tool is unregistered, or this throws).
    const posture = ctx.surface === 'cli';
    const packs = ctx.app.packs;
    if (!packs && posture) {
      return controllerlessPosture(
        {
          session_id: input.session_id ?? '',
          enabled: ctx.app.config.options.operating_packs === true,
          now: ctx.app.clock.now(),
        },
        ctx.app.redactor,
      );
    }
    return await controller(ctx).snapshot(posture ? input.session_id : await sessionOf(ctx, input), {
      posture,
    });
  },
});

export const sessionSetPack = defineTool({
  name: 'session_set_pack',
  family: 'packs',
  tag: 'primitive',
  description:
    "Activate an operating pack for the session: its prompt preamble and rules join the system prompt, its policy narrows the tool set, and its hooks run on agent events. Give a preset id, a pack name (see session_list_packs) or a path to a pack.toml. A pack that fails validation is not applied and the session's previous pack stays in force.",
  input: sessionSetPackInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  gate: packsGate,
  surfaces: { http: { method: 'POST', ...route } },
  async run(ctx, input) {
    const packs = controller(ctx);
    const sessionId = await sessionOf(ctx, input);
    // spec: a coordinator without the pack-mutation provider answers 503, before anything else.
    const readOnly = packs.mutationUnavailable();
    if (readOnly) throw new SvcError('unavailable', readOnly);
    // The ask shows what the pack will run (hook commands, policy…); what is activated must be
    // what was shown. A reference that does not validate is not asked about: it fails and applies
    // nothing (an empty digest: it cannot become valid between here and there unseen).
    const preview = await packs.preview(sessionId, input.pack_path_or_name);
    if (preview) {
      await ctx.ask({
        tool: 'session_set_pack',
        title: `activate operating pack ${printable(preview.pack_name)} (${preview.details.hooks.length} hook(s))`,
        // A session-wide grant covers this very pack content only, never another pack's hooks.
        scope: `session_set_pack:${sessionId}:${preview.digest}`,
        details: {
          session_id: sessionId,
          pack_path_or_name: printable(input.pack_path_or_name),
          ...preview.details,
        },
      });
    }
    return await packs.activate(sessionId, input.pack_path_or_name, { digest: preview?.digest ?? '' });
  },
});

export const sessionClearPack = defineTool({
  name: 'session_clear_pack',
  family: 'packs',
  tag: 'primitive',
  description:
    'Clear the operating pack of the session: its preamble, policy and hooks stop applying. Clearing a session without a pack is not an error.',
  input: sessionClearPackInput,
  mutates: true,
  // Asks itself (precise title, scope, safe hint): the agent loop does not ask again.
  asksPermission: true,
  gate: packsGate,
  surfaces: { http: { method: 'DELETE', ...route } },
  async run(ctx, input) {
    const packs = controller(ctx);
    const sessionId = await sessionOf(ctx, input);
    const readOnly = packs.mutationUnavailable();
    if (readOnly) throw new SvcError('unavailable', readOnly);
    await ctx.ask({
      tool: 'session_clear_pack',
      title: 'clear the operating pack',
      scope: `session_clear_pack:${sessionId}`,
      details: { session_id: sessionId },
    });
    return await packs.clear(sessionId);
  },
});

export const sessionListPacks = defineTool({
  name: 'session_list_packs',
  family: 'packs',
  tag: 'primitive',
  description:
    'List the operating packs found in the workspace (.svc/packs) and the user config dir, with whether each validates, and the presets configured in options.operating_mode_presets.',
  input: sessionListPacksInput,
  mutates: false,
  gate: packsGate,
  // The TUI's /pack picker lists packs through this route over `svc attach`.
  surfaces: { http: { method: 'GET', ...route, path: '/v1/operating-packs' } },
  run: async (ctx) => controller(ctx).discover(),
});

export const sessionGetActivePack = defineTool({
  name: 'session_get_active_pack',
  family: 'packs',
  tag: 'primitive',
  description:
    'Describe the operating pack in force for the session: name, preset, source, skills, hook events with their recent outcomes, policy mode and rule counts, task rule names and choreography. Metadata only: never the preamble, hook commands or rule bodies.',
  input: sessionGetActivePackInput,
  mutates: false,
  gate: packsGate,
  run: async (ctx, input) => await controller(ctx).activePack(await sessionOf(ctx, input)),
});

export const packTools: AnyTool[] = [
  getOperatingMode,
  sessionSetPack,
  sessionClearPack,
  sessionListPacks,
  sessionGetActivePack,
] as AnyTool[];

/** spec: `--json` prints a top-level object holding `posture` plus the discovery fields. */
function cliEnvelope(app: ToolHost, posture: OperatingModeSnapshot) {
  // Discovery is files and config only: it works with the gate off and without a controller.
  const names = discoverPacks({
    workspace: app.workspace,
    env: app.env,
    pluginPackDirs: app.plugins.packDirs(),
  }).map((p) => p.name);
  return {
    posture,
    available_packs: names.length,
    pack_names: names,
    preset_ids: Object.keys(app.config.options.operating_mode_presets).sort(),
  };
}

function renderCliPosture(result: ReturnType<typeof cliEnvelope>): string {
  const p = result.posture;
  const lines = [
    `operating packs: ${p.enabled ? 'enabled' : 'disabled'} (options.operating_packs = ${p.enabled})`,
    `discovered packs: ${result.available_packs}${result.pack_names.length ? ` (${result.pack_names.join(', ')})` : ''}`,
    `preset ids: ${result.preset_ids.length ? result.preset_ids.join(', ') : '(none)'}`,
    'posture:',
    `  state: ${p.state}`,
    `  session: ${p.session_id || '-'}`,
    `  active pack: ${p.active_operating_pack || '-'}`,
    `  preset: ${p.operating_mode_preset_id || '-'}`,
  ];
  if (p.pack_manifest_path) lines.push(`  manifest: ${p.pack_manifest_path}`);
  if (p.last_action) lines.push(`  last action: ${p.last_action}`);
  if (p.unavailable_reason) lines.push(`  reason: ${p.unavailable_reason}`);
  lines.push(`  evidence at: ${p.last_evidence_at}`);
  if (p.active_operating_pack) {
    lines.push(
      `  pack: skills ${p.skills.length ? p.skills.join(', ') : '-'}; hooks ${p.hook_count}; policy rules ${p.policy_rules}; task rules ${p.task_rules}; skill rules ${p.skill_rules}; choreography ${p.choreography || '-'}; preamble ${p.has_prompt_preamble ? 'yes' : 'no'}`,
    );
  }
  for (const d of p.diagnostics) lines.push(`  ${d.level}: [${d.section}] ${d.field}: ${d.message}`);
  return lines.join('\n');
}
