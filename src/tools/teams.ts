/**
 * Teams: `create_team` (a named, persistent team of sub-agent roles with a coordinator, and a task
 * run with it) and `get_teams_status`. Workflow tools (sub-agents never get create_team).
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { runTeamTask, teamsStatus } from '../workflows/team-runner';
import { scopedCaller } from './agent-caller';
import { defineTool } from './core/define-tool';
import { agentField, maxParallel, sessionIdField, toolsField } from './workflow-fields';

const roleName = () => z.string().regex(/^[A-Za-z0-9][\w-]*$/, 'letters, digits, - or _');

export const createTeamInput = () =>
  z.strictObject({
    name: roleName().describe(
      'Team name, unique (a later call with the same name and a task reuses the team).',
    ),
    description: z.string().optional().describe('What the team is for (shown to its coordinator).'),
    members: z
      .array(
        z.strictObject({
          name: roleName().describe('Member name, unique in the team.'),
          agent: agentField(),
          instructions: z
            .string()
            .default('')
            .describe('Role instructions, prepended to every task of this member.'),
          tools: toolsField(),
        }),
      )
      .min(1)
      .max(12)
      .optional()
      .describe('The roles. Required to create a team; omit to run a task on an existing team.'),
    coordinator: z
      .strictObject({
        agent: agentField(),
        instructions: z
          .string()
          .default('')
          .describe('Coordinator instructions, prepended to its plan and synthesis prompts.'),
      })
      .optional()
      .describe(
        'The coordinator that assigns parts of a task and combines the answers (default a general sub-agent).',
      ),
    task: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A task to run with the team now: the coordinator plans, members work in parallel, the coordinator answers.',
      ),
    replace: z
      .boolean()
      .default(false)
      .describe('Replace the definition of an existing team of this name. Default false.'),
    max_parallel: maxParallel(),
    session_id: sessionIdField(),
  });

export const createTeam = defineTool({
  name: 'create_team',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Create a named team of agent roles (members and a coordinator) that persists, and optionally run a task with it: the coordinator splits the task, members work in parallel as sub-agents, the coordinator combines their answers. Returns team_id, and for a task task_id, run_id, session_id, the plan, each member run and the answer. get_teams_status reports teams and their runs.',
  input: createTeamInput,
  mutates: true,
  parity: false,
  surfaces: { mcp: 'svc_create_team' },
  run: async (ctx, input) => {
    const { app } = ctx;
    const existing = await app.workflows.teams.get(input.name);
    let team = existing;
    let created = false;
    if (input.members) {
      const names = input.members.map((m) => m.name);
      const duplicate = names.find((n, i) => names.indexOf(n) !== i);
      if (duplicate) throw new SvcError('invalid_input', `members: "${duplicate}" appears twice`);
      if (existing && !input.replace) {
        throw new SvcError(
          'conflict',
          `name: team "${input.name}" exists; pass replace: true to redefine it, or omit members to run a task with it`,
        );
      }
      if (existing) {
        await ctx.ask({
          tool: 'create_team',
          title: `replace team ${input.name}`,
          scope: `team:${input.name}`,
        });
      }
      const kinds = app.agent.kinds();
      const roles = [
        ...input.members.map((m, i) => ({ field: `members[${i}].agent`, agent: m.agent })),
        { field: 'coordinator.agent', agent: input.coordinator?.agent ?? 'general' },
      ];
      for (const role of roles) {
        const kind = kinds.find((k) => k.id === role.agent);
        if (!kind || kind.mode === 'primary') {
          throw new SvcError(
            'invalid_input',
            `${role.field}: "${role.agent}" is not a sub-agent kind; use general, explore or a subagent [agents.<id>]`,
          );
        }
      }
      team = await app.workflows.teams.save({
        name: input.name,
        description: input.description ?? existing?.description ?? '',
        coordinator: {
          agent: input.coordinator?.agent ?? 'general',
          instructions: input.coordinator?.instructions ?? '',
        },
        members: input.members.map((m) => ({
          name: m.name,
          agent: m.agent,
          instructions: m.instructions,
          tools: m.tools ?? null,
        })),
      });
      created = !existing;
    }
    if (!team)
      throw new SvcError(
        'invalid_input',
        `members: required to create team "${input.name}" (no team of that name exists)`,
      );
    const task = input.task
      ? await runTeamTask(
          app,
          app.workflows,
          await scopedCaller(ctx, input.session_id),
          team,
          input.task,
          input.max_parallel ?? app.config.options.workflows.max_parallel,
        )
      : null;
    return {
      team_id: team.id,
      name: team.name,
      created,
      replaced: Boolean(existing && input.members),
      team,
      task,
    };
  },
  toModelOutput: (r) =>
    r.task
      ? `Team ${r.name} task ${r.task.status} (task_id ${r.task.task_id}, run ${r.task.run_id}).${r.task.warnings.length ? ` Warnings: ${r.task.warnings.join('; ')}.` : ''}\n\n${r.task.answer || r.task.error || ''}`
      : `Team ${r.name} ${r.created ? 'created' : r.replaced ? 'replaced' : 'unchanged'} (team_id ${r.team_id}) with ${r.team.members.length} members: ${r.team.members.map((m) => m.name).join(', ')}.`,
});

export const getTeamsStatus = defineTool({
  name: 'get_teams_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Teams made by create_team: their members and coordinator, each with its sessions and runs, and the recent tasks with their status.',
  input: () =>
    z.strictObject({ name: z.string().min(1).optional().describe('One team. Omit for every team.') }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_teams_status',
    cli: {
      command: 'teams status',
      text: (r: Awaited<ReturnType<typeof teamsStatus>>) =>
        r.teams.length
          ? r.teams
              .map((t) =>
                [
                  `${t.name} (${t.team_id}): ${t.counts.members} members, ${t.counts.tasks} tasks, ${t.counts.running} running`,
                  ...t.members.map(
                    (m) => `  ${m.name.padEnd(16)} ${m.agent.padEnd(10)} ${m.sessions.length} session(s)`,
                  ),
                ].join('\n'),
              )
              .join('\n')
          : 'no teams',
    },
  },
  run: async (ctx, input) => teamsStatus(ctx.app, ctx.app.workflows, input.name),
});
