/**
 * `get_composition_graph` (GET /v1/sessions/{id}/composition-graph, `svc config
 * show-composition-graph`): how a session family's work is composed — sessions and sub-agent
 * sessions, their runs and sub-agent runs, the tools the runs called, the files those tools
 * changed and the MCP servers that provide tools. Built from sessions, `agent_runs`, the
 * `tool.finished` ledger events, file history and the `[mcp.<id>]` config. Bounded by
 * `max_nodes`: nodes are kept by kind in that order (sessions, runs newest first, tools, MCP
 * servers, files most changed first) and edges only between kept nodes.
 * @module
 */
import type { Config } from '../config/schema';
import type { Redactor } from '../redact';
import type { AgentRun, RunEvent } from '../runs/run-ledger';
import type { Session } from '../sessions/session-store';
import { readoutHeader, resolveSessionScope, type SessionReadoutDeps, str } from './session-scope';

export const DEFAULT_GRAPH_MAX_NODES = 300;
export const MAX_GRAPH_MAX_NODES = 2000;

export type NodeType = 'session' | 'run' | 'tool' | 'mcp_server' | 'file';
export type EdgeType = 'parent_of' | 'has_run' | 'spawned' | 'called' | 'changed' | 'provided_by';

export interface GraphNode {
  id: string;
  type: NodeType;
  label: string;
  attrs: Record<string, unknown>;
}

export interface GraphEdge {
  from: string;
  to: string;
  type: EdgeType;
  count: number;
  /** `called` edges: how many of the calls failed. */
  errors?: number;
}

const NODE_ORDER: NodeType[] = ['session', 'run', 'tool', 'mcp_server', 'file'];

type EdgeAdder = (from: string, to: string, type: EdgeType, count?: number, errors?: number) => void;

export async function buildCompositionGraph(
  app: SessionReadoutDeps,
  input: { session_id?: string; max_nodes: number },
  contextSessionId?: string,
) {
  const scope = await resolveSessionScope(app, input.session_id, contextSessionId);
  const header = { ...readoutHeader(app, scope), filters_applied: { max_nodes: input.max_nodes } };
  if (!scope.session) {
    return {
      ...header,
      family_session_id: null,
      counts: countsOf([], []),
      truncated: false,
      omitted: {} as Record<string, number>,
      nodes: [] as GraphNode[],
      edges: [] as GraphEdge[],
      warnings: scope.warnings,
    };
  }
  const root = await app.sessions.root(scope.session.id);
  const sessions = await app.sessions.family(root);
  const sessionIds = sessions.map((s) => s.id);
  const runs = await app.runs.queries.ofFamily(root, { order: 'desc' });
  const calls = sessionIds.length
    ? await app.runs.queries.findEvents({ sessionIds, types: ['tool.finished'] })
    : [];
  const changes = await app.ws.history.queries.fileChangesByTool(sessionIds);

  const nodes: GraphNode[] = [];
  const edges = new Map<string, GraphEdge>();
  const edge: EdgeAdder = (from, to, type, count = 1, errors = 0) => {
    const key = `${from}\u0000${to}\u0000${type}`;
    const existing = edges.get(key);
    if (existing) {
      existing.count += count;
      if (existing.errors !== undefined) existing.errors += errors;
    } else edges.set(key, { from, to, type, count, ...(type === 'called' ? { errors } : {}) });
  };
  nodes.push(...sessionAndRunNodes(app, sessions, runs, edge));
  nodes.push(...toolAndServerNodes(app.config.mcp, calls, changes, edge));
  nodes.push(...fileNodes(app, changes, edge));

  // Bound: keep nodes by kind order, then edges between kept nodes.
  const ordered = NODE_ORDER.flatMap((type) => nodes.filter((n) => n.type === type));
  const kept = ordered.slice(0, input.max_nodes);
  const omitted: Record<string, number> = {};
  for (const node of ordered.slice(input.max_nodes)) omitted[node.type] = (omitted[node.type] ?? 0) + 1;
  const keptIds = new Set(kept.map((n) => n.id));
  const keptEdges = [...edges.values()].filter((e) => keptIds.has(e.from) && keptIds.has(e.to));
  return {
    ...header,
    family_session_id: root,
    counts: countsOf(kept, keptEdges),
    truncated: kept.length < ordered.length,
    omitted,
    nodes: kept,
    edges: keptEdges,
    warnings: scope.warnings,
  };
}

function sessionAndRunNodes(
  app: { readonly redactor: Redactor },
  sessions: readonly Session[],
  runs: readonly AgentRun[],
  edge: EdgeAdder,
): GraphNode[] {
  const nodes: GraphNode[] = [];
  const runsPerSession = new Map<string, number>();
  for (const run of runs) runsPerSession.set(run.session_id, (runsPerSession.get(run.session_id) ?? 0) + 1);
  for (const session of sessions) {
    nodes.push({
      id: `session:${session.id}`,
      type: 'session',
      label: app.redactor.string(session.title) || session.id,
      attrs: {
        session_id: session.id,
        parent_id: session.parent_id,
        agent: session.agent,
        mode: session.mode,
        subagent: session.metadata.subagent === true,
        runs: runsPerSession.get(session.id) ?? 0,
      },
    });
    if (session.parent_id) edge(`session:${session.parent_id}`, `session:${session.id}`, 'parent_of');
  }
  for (const run of runs) {
    nodes.push({
      id: `run:${run.id}`,
      type: 'run',
      label: `${run.agent} run ${run.id}`,
      attrs: {
        run_id: run.id,
        session_id: run.session_id,
        parent_run_id: run.parent_run_id,
        status: run.status,
        agent: run.agent,
        origin: run.origin,
        steps: run.steps,
      },
    });
    edge(`session:${run.session_id}`, `run:${run.id}`, 'has_run');
    if (run.parent_run_id) edge(`run:${run.parent_run_id}`, `run:${run.id}`, 'spawned');
  }
  return nodes;
}

/** Tools the runs called (or that changed files), then the MCP servers that provide them. */
function toolAndServerNodes(
  mcpConfig: Config['mcp'],
  calls: readonly RunEvent[],
  changes: readonly { tool: string }[],
  edge: EdgeAdder,
): GraphNode[] {
  const nodes: GraphNode[] = [];
  const mcpIds = Object.keys(mcpConfig).sort((a, b) => b.length - a.length);
  const serverOf = (tool: string): string | null => {
    if (!tool.startsWith('mcp_')) return null;
    const rest = tool.slice(4);
    const known = mcpIds.find((id) => rest.startsWith(`${id}_`));
    if (known) return known;
    const cut = rest.indexOf('_');
    return cut > 0 ? rest.slice(0, cut) : null;
  };
  const tools = new Map<string, { calls: number; errors: number }>();
  for (const row of calls) {
    const p = row.payload;
    const name = str(p.tool) ?? 'unknown';
    const t = tools.get(name) ?? { calls: 0, errors: 0 };
    tools.set(name, t);
    t.calls++;
    const failed = p.is_error === true;
    if (failed) t.errors++;
    edge(`run:${row.run_id}`, `tool:${name}`, 'called', 1, failed ? 1 : 0);
  }
  for (const change of changes) {
    if (!tools.has(change.tool)) tools.set(change.tool, { calls: 0, errors: 0 });
  }
  const servers = new Map<string, number>();
  for (const id of Object.keys(mcpConfig)) servers.set(id, 0);
  for (const [name, t] of [...tools.entries()].sort(
    (a, b) => b[1].calls - a[1].calls || a[0].localeCompare(b[0]),
  )) {
    const server = serverOf(name);
    nodes.push({
      id: `tool:${name}`,
      type: 'tool',
      label: name,
      attrs: { tool: name, calls: t.calls, errors: t.errors, mcp_server: server },
    });
    if (server) {
      servers.set(server, (servers.get(server) ?? 0) + t.calls);
      edge(`tool:${name}`, `mcp:${server}`, 'provided_by');
    }
  }
  for (const [id, toolCalls] of [...servers.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    const config = mcpConfig[id];
    nodes.push({
      id: `mcp:${id}`,
      type: 'mcp_server',
      label: id,
      attrs: {
        server: id,
        configured: config !== undefined,
        transport: config ? (config.type ?? (config.url ? 'http' : 'stdio')) : null,
        disabled: config?.disabled === true,
        tool_calls: toolCalls,
      },
    });
  }
  return nodes;
}

/** Files the tools changed, most changed first. */
function fileNodes(
  app: { readonly redactor: Redactor },
  changes: readonly { tool: string; path: string; change: string; n: number }[],
  edge: EdgeAdder,
): GraphNode[] {
  const files = new Map<string, { changes: number; kinds: Set<string> }>();
  for (const change of changes) {
    const path = app.redactor.string(change.path);
    const f = files.get(path) ?? { changes: 0, kinds: new Set<string>() };
    files.set(path, f);
    f.changes += change.n;
    f.kinds.add(change.change);
    edge(`tool:${change.tool}`, `file:${path}`, 'changed', change.n);
  }
  return [...files.entries()]
    .sort((a, b) => b[1].changes - a[1].changes || a[0].localeCompare(b[0]))
    .map(([label, f]) => ({
      id: `file:${label}`,
      type: 'file' as const,
      label,
      attrs: { path: label, changes: f.changes, change_kinds: [...f.kinds].sort() },
    }));
}

function countsOf(nodes: GraphNode[], edges: GraphEdge[]) {
  const by = (type: NodeType) => nodes.filter((n) => n.type === type).length;
  return {
    nodes: nodes.length,
    edges: edges.length,
    sessions: by('session'),
    runs: by('run'),
    tools: by('tool'),
    mcp_servers: by('mcp_server'),
    files: by('file'),
  };
}

export type CompositionGraph = Awaited<ReturnType<typeof buildCompositionGraph>>;

/** `svc config show-composition-graph` without --json: the graph as an indented outline. */
export function renderCompositionGraph(graph: CompositionGraph): string {
  if (!graph.session_known) return `no composition graph: ${graph.warnings.join('; ') || 'no session'}`;
  const c = graph.counts;
  const lines = [
    `composition graph of session family ${graph.family_session_id} (${c.sessions} sessions, ${c.runs} runs, ${c.tools} tools, ${c.mcp_servers} MCP servers, ${c.files} files, ${c.edges} edges)${graph.truncated ? ' [truncated]' : ''}`,
  ];
  const label = new Map(graph.nodes.map((n) => [n.id, n]));
  const out = (from: string, type: string) => graph.edges.filter((e) => e.from === from && e.type === type);
  const describe = (id: string) => {
    const node = label.get(id);
    return node ? node.label : id;
  };
  for (const node of graph.nodes) {
    if (node.type === 'session') {
      lines.push(
        `session ${node.attrs.session_id} "${node.label}"${node.attrs.parent_id ? ` (child of ${node.attrs.parent_id})` : ''}`,
      );
      for (const run of out(node.id, 'has_run')) {
        const r = label.get(run.to);
        lines.push(`  ${describe(run.to)}: ${r?.attrs.status ?? '?'}`);
        for (const call of out(run.to, 'called')) lines.push(`    → ${describe(call.to)} ×${call.count}`);
        for (const child of out(run.to, 'spawned')) lines.push(`    ⇒ ${describe(child.to)}`);
      }
    }
  }
  const fileEdges = graph.edges.filter((e) => e.type === 'changed');
  if (fileEdges.length) {
    lines.push('files changed:');
    for (const e of fileEdges) lines.push(`  ${describe(e.from)} → ${describe(e.to)} ×${e.count}`);
  }
  const servers = graph.nodes.filter((n) => n.type === 'mcp_server');
  if (servers.length) {
    lines.push('MCP servers:');
    for (const s of servers)
      lines.push(
        `  ${s.label}: ${s.attrs.tool_calls} tool call(s)${s.attrs.configured ? '' : ' (not configured now)'}`,
      );
  }
  if (graph.warnings.length) lines.push(...graph.warnings.map((w) => `! ${w}`));
  return lines.join('\n');
}
