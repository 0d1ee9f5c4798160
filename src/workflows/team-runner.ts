/**
 * A team at work (create_team with a task) and the team read model (get_teams_status).
 *
 * A task runs as a pipeline of kind `team` in three phases, each a sub-agent run of the task's
 * pipeline run: the coordinator plans (assigns a self-contained part to each member it needs, as
 * JSON), the members work in parallel, and the coordinator combines their answers into the
 * final one. When the plan cannot be read, every member gets the whole task (said in `plan`).
 * @module
 */
import { z } from 'zod';
import { toSvcError } from '../errors';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import { lazy } from '../util/lazy';
import { mapBounded } from './dag';
import type { Caller } from './lineage';
import type { Pipeline } from './pipeline';
import type { Team, TeamRole } from './team-store';
import type { WorkflowRun } from './workflow-runs';
import type { WorkflowService } from './workflow-service';

export interface MemberResult {
  member: string;
  agent: string;
  assignment: string;
  status: 'completed' | 'failed' | 'cancelled';
  run_id: string | null;
  session_id: string | null;
  output: string;
  error: string | null;
}

export interface TeamTaskResult {
  task_id: string;
  team: string;
  team_id: string;
  status: WorkflowRun['status'];
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  plan: {
    source: 'coordinator' | 'fallback';
    note: string | null;
    assignments: { member: string; task: string }[];
  };
  coordinator_runs: { phase: 'plan' | 'synthesis'; run_id: string; session_id: string; status: string }[];
  members: MemberResult[];
  answer: string;
  error: string | null;
  warnings: string[];
}

const planSchema = lazy(() =>
  z.object({
    assignments: z.array(z.object({ member: z.string(), task: z.string() }).passthrough()),
  }),
);

export async function runTeamTask(
  deps: { readonly redactor: Pick<Redactor, 'string'> },
  workflows: Pick<WorkflowService, 'start'>,
  caller: Caller,
  team: Team,
  task: string,
  maxParallel: number,
): Promise<TeamTaskResult> {
  const pipeline = await workflows.start(caller, {
    kind: 'team',
    name: team.name,
    ref: team.id,
    title: `team ${team.name}: ${task.split('\n')[0].slice(0, 60)}`,
    request: `Team ${team.name} (${team.members.map((m) => m.name).join(', ')}), task:\n${task}`,
    input: { team_id: team.id, team: team.name, task },
  });
  const coordinatorRuns: TeamTaskResult['coordinator_runs'] = [];
  let plan: TeamTaskResult['plan'] = { source: 'fallback', note: null, assignments: [] };
  let members: MemberResult[] = [];
  let answer = '';
  let failure: string | null = null;
  try {
    const planning = await coordinator(pipeline, team, 'plan', planPrompt(team, task));
    coordinatorRuns.push({
      phase: 'plan',
      run_id: planning.run_id,
      session_id: planning.session_id,
      status: planning.status,
    });
    if (planning.status !== 'completed') {
      throw new Error(
        `the coordinator's planning run ended ${planning.status}${planning.error ? `: ${planning.error}` : ''}`,
      );
    }
    plan = readPlan(planning.text, team, task);
    if (plan.note) pipeline.warnings.push(plan.note);
    pipeline.event('team.planned', {
      source: plan.source,
      assignments: plan.assignments.map((a) => a.member),
    });
    members = await mapBounded(plan.assignments, maxParallel, (assignment) =>
      runMember(
        deps,
        pipeline,
        team,
        team.members.find((m) => m.name === assignment.member)!,
        task,
        assignment.task,
      ),
    );
    pipeline.throwIfStopped();
    const synthesis = await coordinator(pipeline, team, 'synthesis', synthesisPrompt(team, task, members));
    coordinatorRuns.push({
      phase: 'synthesis',
      run_id: synthesis.run_id,
      session_id: synthesis.session_id,
      status: synthesis.status,
    });
    if (synthesis.status !== 'completed') {
      throw new Error(
        `the coordinator's synthesis run ended ${synthesis.status}${synthesis.error ? `: ${synthesis.error}` : ''}`,
      );
    }
    answer = synthesis.text;
  } catch (error) {
    failure = deps.redactor.string(toSvcError(error).message);
  }
  const incomplete = members.filter((m) => m.status !== 'completed');
  const status = failure ? (pipeline.signal.aborted ? 'cancelled' : 'failed') : 'completed';
  if (!failure && incomplete.length) {
    pipeline.warnings.push(
      `${incomplete.map((m) => m.member).join(', ')} did not complete; the answer says what is missing`,
    );
  }
  const row = await pipeline.finish({
    status,
    error: failure,
    text: answer || `Team ${team.name} ${status}.${failure ? ` ${failure}` : ''}`,
    result: { plan, coordinator_runs: coordinatorRuns, members, answer, warnings: pipeline.warnings },
  });
  return {
    task_id: pipeline.id,
    team: team.name,
    team_id: team.id,
    status: row.status,
    session_id: pipeline.sessionId,
    run_id: pipeline.runId,
    parent_run_id: pipeline.parentRunId,
    family_session_id: pipeline.familySessionId,
    plan,
    coordinator_runs: coordinatorRuns,
    members,
    answer,
    error: row.error ?? failure,
    warnings: pipeline.warnings,
  };
}

function coordinator(pipeline: Pipeline, team: Team, phase: 'plan' | 'synthesis', prompt: string) {
  return pipeline.child({
    prompt: `${team.coordinator.instructions ? `${team.coordinator.instructions}\n\n` : ''}${prompt}`,
    agent: team.coordinator.agent,
    title: `${team.name}: coordinator (${phase})`,
    metadata: { team: team.name, team_id: team.id, team_role: 'coordinator', team_phase: phase },
    field: 'coordinator',
  });
}

async function runMember(
  deps: { readonly redactor: Pick<Redactor, 'string'> },
  pipeline: Pipeline,
  team: Team,
  member: TeamRole,
  task: string,
  assignment: string,
): Promise<MemberResult> {
  const result: MemberResult = {
    member: member.name,
    agent: member.agent,
    assignment,
    status: 'failed',
    run_id: null,
    session_id: null,
    output: '',
    error: null,
  };
  try {
    const run = await pipeline.child({
      prompt: `${member.instructions ? `${member.instructions}\n\n` : ''}You are ${member.name} on the team "${team.name}". The team's overall task:\n${task}\n\nYour part:\n${assignment}\n\nDo your part, then answer with what you did and found: the coordinator combines the members' answers.`,
      agent: member.agent,
      tools: member.tools ?? undefined,
      title: `${team.name}: ${member.name}`,
      metadata: { team: team.name, team_id: team.id, team_role: 'member', team_member: member.name },
      field: `members.${member.name}`,
    });
    result.run_id = run.run_id;
    result.session_id = run.session_id;
    result.output = run.text;
    result.status =
      run.status === 'completed' ? 'completed' : run.status === 'failed' ? 'failed' : 'cancelled';
    if (run.status !== 'completed')
      result.error = `the run ended ${run.status}${run.error ? `: ${run.error}` : ''}`;
  } catch (error) {
    result.status = pipeline.signal.aborted ? 'cancelled' : 'failed';
    result.error = deps.redactor.string(toSvcError(error).message);
  }
  return result;
}

function roster(team: Team): string {
  return team.members
    .map(
      (m) =>
        `- ${m.name} (${m.agent}${m.tools ? `; tools: ${m.tools.join(', ')}` : ''}): ${m.instructions.split('\n')[0] || 'no instructions'}`,
    )
    .join('\n');
}

function planPrompt(team: Team, task: string): string {
  return `You coordinate the team "${team.name}"${team.description ? `: ${team.description}` : ''}.
Members:
${roster(team)}

The task:
${task}

Plan the work: give each member you need one self-contained part (the member sees only its part and the task, not this conversation). Members work in parallel.
Answer with a JSON object only, no other text, in this shape:
{"assignments": [{"member": "<member name>", "task": "<what this member must do>"}]}`;
}

function synthesisPrompt(team: Team, task: string, members: MemberResult[]): string {
  return `You coordinate the team "${team.name}". The task:
${task}

The members reported:
${members.map((m) => `\n### ${m.member} (${m.status})\nAssigned: ${m.assignment}\n${m.output || m.error || '(no answer)'}`).join('\n')}

Combine their work into the final answer to the task. Say plainly what is incomplete or failed.`;
}

/** The coordinator's assignments; unknown members are dropped; nothing readable → everyone gets the task. */
export function readPlan(text: string, team: Team, task: string): TeamTaskResult['plan'] {
  const fallback = (note: string): TeamTaskResult['plan'] => ({
    source: 'fallback',
    note,
    assignments: team.members.map((m) => ({ member: m.name, task })),
  });
  const candidates = [
    text.trim(),
    /```(?:json)?\s*([\s\S]*?)```/.exec(text)?.[1]?.trim(),
    text.includes('{') ? text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1) : undefined,
  ].filter((c): c is string => Boolean(c));
  let parsed: z.output<ReturnType<typeof planSchema>> | undefined;
  for (const candidate of candidates) {
    try {
      const result = planSchema().safeParse(JSON.parse(candidate));
      if (result.success) {
        parsed = result.data;
        break;
      }
    } catch {
      // not this candidate
    }
  }
  if (!parsed)
    return fallback('the coordinator did not answer with a readable plan; every member got the whole task');
  const names = new Set(team.members.map((m) => m.name));
  const merged = new Map<string, string[]>();
  const unknown: string[] = [];
  for (const assignment of parsed.assignments) {
    if (!names.has(assignment.member)) {
      unknown.push(assignment.member);
      continue;
    }
    if (!assignment.task.trim()) continue;
    merged.set(assignment.member, [...(merged.get(assignment.member) ?? []), assignment.task.trim()]);
  }
  if (merged.size === 0)
    return fallback('the coordinator assigned no known member; every member got the whole task');
  return {
    source: 'coordinator',
    note: unknown.length
      ? `the plan named unknown members (${unknown.join(', ')}); their parts were dropped`
      : null,
    assignments: team.members
      .filter((m) => merged.has(m.name))
      .map((m) => ({ member: m.name, task: merged.get(m.name)!.join('\n\n') })),
  };
}

/** get_teams_status: every team (or one), its members, and each member's sessions and runs. */
export async function teamsStatus(
  deps: { readonly sessions: Pick<SessionStore, 'list'>; readonly runs: Pick<RunLedger, 'list'> },
  workflows: Pick<WorkflowService, 'teams' | 'runs'>,
  name?: string,
) {
  const teams = name
    ? [await workflows.teams.get(name)].filter((t): t is Team => t !== undefined)
    : await workflows.teams.list();
  // The sessions each task started, read first (the store is async).
  const tasksOf = new Map<string, Awaited<ReturnType<typeof workflows.runs.list>>>();
  for (const team of teams)
    tasksOf.set(team.id, await workflows.runs.list({ kind: 'team', ref: team.id, limit: 20 }));
  const children = new Map<string, Awaited<ReturnType<SessionStore['list']>>>();
  for (const tasks of tasksOf.values()) {
    for (const task of tasks) {
      children.set(task.session_id, await deps.sessions.list({ parent_id: task.session_id, limit: 200 }));
    }
  }
  const lastRuns = new Map<string, Awaited<ReturnType<typeof deps.runs.list>>[number] | undefined>();
  for (const sessions of children.values()) {
    for (const session of sessions)
      lastRuns.set(session.id, (await deps.runs.list({ session_id: session.id, limit: 1 }))[0]);
  }
  const view = teams.map((team) => {
    const tasks = tasksOf.get(team.id)!;
    const sessions = tasks.flatMap((task) =>
      children.get(task.session_id)!.map((session) => {
        const run = lastRuns.get(session.id);
        return {
          task_id: task.id,
          role: String(session.metadata.team_role ?? ''),
          member: typeof session.metadata.team_member === 'string' ? session.metadata.team_member : null,
          phase: typeof session.metadata.team_phase === 'string' ? session.metadata.team_phase : null,
          session_id: session.id,
          run_id: run?.id ?? null,
          status: run?.status ?? null,
          created_at: session.created_at,
        };
      }),
    );
    const pick = (s: (typeof sessions)[number]) => ({
      task_id: s.task_id,
      session_id: s.session_id,
      run_id: s.run_id,
      status: s.status,
      created_at: s.created_at,
    });
    return {
      team_id: team.id,
      name: team.name,
      description: team.description,
      coordinator: {
        ...team.coordinator,
        sessions: sessions
          .filter((s) => s.role === 'coordinator')
          .map((s) => ({ ...pick(s), phase: s.phase })),
      },
      members: team.members.map((member) => ({
        ...member,
        sessions: sessions.filter((s) => s.role === 'member' && s.member === member.name).map(pick),
      })),
      tasks: tasks.map((task) => ({
        task_id: task.id,
        task: String(task.input.task ?? ''),
        status: task.status,
        session_id: task.session_id,
        run_id: task.run_id,
        parent_run_id: task.parent_run_id,
        error: task.error,
        created_at: task.created_at,
        finished_at: task.finished_at,
      })),
      counts: {
        members: team.members.length,
        tasks: tasks.length,
        running: tasks.filter((t) => t.status === 'running').length,
        runs: sessions.filter((s) => s.run_id).length,
        active_runs: sessions.filter((s) => s.status === 'running' || s.status === 'queued').length,
      },
      created_at: team.created_at,
      updated_at: team.updated_at,
    };
  });
  return {
    teams: view,
    counts: {
      teams: view.length,
      tasks: view.reduce((n, t) => n + t.counts.tasks, 0),
      running_tasks: view.reduce((n, t) => n + t.counts.running, 0),
    },
  };
}
