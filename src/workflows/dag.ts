/**
 * Directed acyclic graphs of tasks (execute_dag, workflow templates): validation with field-level
 * problems (duplicate ids, unknown or self dependencies, cycles named as a path), and an executor
 * that runs every task whose dependencies completed, up to `maxParallel` at once, in declaration
 * order. A task whose dependency did not complete is skipped, not run on missing input.
 * @module
 */
import { SvcError } from '../errors';

export interface DagNode {
  id: string;
  depends_on: string[];
}

export interface DagProblem {
  field: string;
  message: string;
}

/** Every structural problem of the graph; empty when it is a valid DAG. */
export function dagProblems(nodes: readonly DagNode[], field = 'tasks'): DagProblem[] {
  const problems: DagProblem[] = [];
  const index = new Map<string, number>();
  nodes.forEach((node, i) => {
    if (index.has(node.id)) {
      problems.push({
        field: `${field}[${i}].id`,
        message: `duplicate id "${node.id}" (also ${field}[${index.get(node.id)}])`,
      });
    } else index.set(node.id, i);
  });
  nodes.forEach((node, i) => {
    node.depends_on.forEach((dep, j) => {
      if (dep === node.id) {
        problems.push({
          field: `${field}[${i}].depends_on[${j}]`,
          message: `"${node.id}" depends on itself`,
        });
      } else if (!index.has(dep)) {
        problems.push({
          field: `${field}[${i}].depends_on[${j}]`,
          message: `unknown ${field === 'steps' ? 'step' : 'task'} "${dep}"; ids: ${[...index.keys()].join(', ')}`,
        });
      }
    });
  });
  if (problems.length) return problems;
  const cycle = findCycle(nodes);
  if (cycle) {
    problems.push({
      field,
      message: `dependency cycle: ${cycle.join(' → ')} (each depends on the next); remove one of these depends_on entries`,
    });
  }
  return problems;
}

/** Throws one `invalid_input` error listing the problems. */
export function assertDag(nodes: readonly DagNode[], field = 'tasks'): void {
  const problems = dagProblems(nodes, field);
  if (problems.length) {
    throw new SvcError('invalid_input', problems.map((p) => `${p.field}: ${p.message}`).join('; '), {
      details: { problems },
    });
  }
}

/**
 * A cycle as a closed path of dependencies (`a → b → a`: a depends on b, b on a), or undefined.
 * Iterative (an explicit stack), so a long chain cannot overflow the call stack.
 */
export function findCycle(nodes: readonly DagNode[]): string[] | undefined {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const state = new Map<string, 'visiting' | 'done'>();
  for (const root of nodes) {
    if (state.has(root.id)) continue;
    // The path being walked, each entry with the index of its next dependency to visit.
    const path: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    state.set(root.id, 'visiting');
    while (path.length) {
      const top = path.at(-1)!;
      const deps = byId.get(top.id)?.depends_on ?? [];
      if (top.next >= deps.length) {
        state.set(top.id, 'done');
        path.pop();
        continue;
      }
      const dep = deps[top.next++];
      if (!byId.has(dep)) continue;
      const seen = state.get(dep);
      if (seen === 'visiting') {
        const ids = path.map((p) => p.id);
        return [...ids.slice(ids.indexOf(dep)), dep];
      }
      if (seen === undefined) {
        state.set(dep, 'visiting');
        path.push({ id: dep, next: 0 });
      }
    }
  }
  return undefined;
}

/**
 * Every node's transitive dependencies, computed once in topological order (a node's set is its
 * dependencies and theirs). Nodes on a cycle, which have no such order, get what was reachable.
 */
export function ancestorMap(nodes: readonly DagNode[]): Map<string, Set<string>> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const waiting = new Map(nodes.map((n) => [n.id, new Set(n.depends_on.filter((d) => byId.has(d))).size]));
  const dependents = new Map<string, string[]>();
  for (const node of nodes) {
    for (const dep of new Set(node.depends_on)) {
      if (byId.has(dep)) dependents.set(dep, [...(dependents.get(dep) ?? []), node.id]);
    }
  }
  const out = new Map<string, Set<string>>(nodes.map((n) => [n.id, new Set<string>()]));
  const ready = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id);
  while (ready.length) {
    const id = ready.pop()!;
    const mine = out.get(id)!;
    for (const dep of byId.get(id)!.depends_on) {
      if (!byId.has(dep)) continue;
      mine.add(dep);
      for (const a of out.get(dep)!) mine.add(a);
    }
    for (const next of dependents.get(id) ?? []) {
      const left = waiting.get(next)! - 1;
      waiting.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return out;
}

export type NodeStatus = 'completed' | 'failed' | 'cancelled' | 'skipped';

export interface NodeOutcome {
  status: NodeStatus;
  /** Why it was skipped or failed. */
  reason?: string;
}

/** The row a runner keeps per node: its final status and why it did not complete. */
export interface NodeResult {
  id: string;
  status: NodeStatus;
  error: string | null;
}

/** Copy the outcomes of `runDag` onto the runner's rows, keeping an error recorded earlier. */
export function applyOutcomes(
  results: ReadonlyMap<string, NodeResult>,
  outcomes: ReadonlyMap<string, NodeOutcome>,
): void {
  for (const [id, outcome] of outcomes) {
    const result = results.get(id)!;
    result.status = outcome.status;
    if (outcome.reason && !result.error) result.error = outcome.reason;
  }
}

/**
 * The verdict of a finished graph: completed when every node completed, cancelled when it was
 * aborted, else failed; the error names each node that did not complete (or the run's failure).
 */
export function dagVerdict(
  nodes: readonly NodeResult[],
  failure: string | null,
  aborted: boolean,
): { status: 'completed' | 'failed' | 'cancelled'; error: string | null } {
  const incomplete = nodes.filter((n) => n.status !== 'completed');
  if (!failure && incomplete.length === 0) return { status: 'completed', error: null };
  return {
    status: aborted ? 'cancelled' : 'failed',
    error: failure ?? incomplete.map((n) => `${n.id} ${n.status}${n.error ? `: ${n.error}` : ''}`).join('; '),
  };
}

/**
 * Run the graph. `run` is called for a node once all its dependencies completed; nodes whose
 * dependency did not complete are skipped. After an abort no new node starts (they are
 * `cancelled`). Resolves once every node has an outcome.
 */
export async function runDag<O extends NodeOutcome>(
  nodes: readonly DagNode[],
  options: {
    maxParallel: number;
    signal: AbortSignal;
    run(node: DagNode): Promise<O>;
    onSkip?(node: DagNode, reason: string): void;
  },
): Promise<Map<string, O | NodeOutcome>> {
  assertDag(nodes);
  const outcomes = new Map<string, O | NodeOutcome>();
  const running = new Map<string, Promise<void>>();
  const pending = [...nodes];
  const limit = Math.max(1, options.maxParallel);

  const settleBlocked = () => {
    let changed = true;
    while (changed) {
      changed = false;
      for (const node of [...pending]) {
        const blocker = node.depends_on.find((dep) => {
          const outcome = outcomes.get(dep);
          return outcome !== undefined && outcome.status !== 'completed';
        });
        if (blocker === undefined && !options.signal.aborted) continue;
        const reason = options.signal.aborted
          ? 'the workflow was cancelled before this task started'
          : `dependency "${blocker}" ${outcomes.get(blocker!)!.status}`;
        const outcome: NodeOutcome = { status: options.signal.aborted ? 'cancelled' : 'skipped', reason };
        outcomes.set(node.id, outcome);
        pending.splice(pending.indexOf(node), 1);
        options.onSkip?.(node, reason);
        changed = true;
      }
    }
  };

  while (pending.length || running.size) {
    settleBlocked();
    let started = 0;
    for (const node of [...pending]) {
      if (running.size >= limit) break;
      if (!node.depends_on.every((dep) => outcomes.get(dep)?.status === 'completed')) continue;
      if (started++ > 0) {
        // Tasks ready together start in order: the one before reaches its first wait (its run is
        // created; the store's awaits resolve within the turn) before the next one starts.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (options.signal.aborted) break;
      }
      pending.splice(pending.indexOf(node), 1);
      const task = options
        .run(node)
        .catch(
          (error): NodeOutcome => ({
            status: 'failed',
            reason: error instanceof Error ? error.message : String(error),
          }),
        )
        .then((outcome) => {
          outcomes.set(node.id, outcome);
          running.delete(node.id);
        });
      running.set(node.id, task);
    }
    if (running.size === 0) {
      settleBlocked();
      if (pending.length && running.size === 0) {
        // Unreachable for a valid DAG; a guard against spinning forever.
        throw new SvcError('internal', `tasks ${pending.map((n) => n.id).join(', ')} can never start`);
      }
      continue;
    }
    await Promise.race(running.values());
  }
  return outcomes;
}

/** Run `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return results;
}
