/**
 * Saved workflow templates (workflow_template, orchestrate_workflow): a name, a description and
 * a validated definition (parameters and a DAG of recipe or agent steps). `revision` counts
 * updates, so a run records which revision it ran.
 * @module
 */
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';
import type { WorkflowDefinition } from './workflow-definition';

export interface WorkflowTemplate {
  name: string;
  description: string;
  definition: WorkflowDefinition;
  revision: number;
  created_at: number;
  updated_at: number;
}

interface Row extends Omit<WorkflowTemplate, 'definition'> {
  definition: string;
}

export interface TemplateStore {
  get(name: string): Promise<WorkflowTemplate | undefined>;
  list(): Promise<WorkflowTemplate[]>;
  insert(name: string, definition: WorkflowDefinition): Promise<WorkflowTemplate>;
  /** Replace the definition; the revision goes up by one. */
  replace(name: string, definition: WorkflowDefinition): Promise<WorkflowTemplate>;
  delete(name: string): Promise<boolean>;
}

export function createTemplateStore(deps: { db: () => Db; clock: Clock; ids: Ids }): TemplateStore {
  const toTemplate = (row: Row): WorkflowTemplate => ({ ...row, definition: JSON.parse(row.definition) });
  const store: TemplateStore = {
    async get(name) {
      const row = deps.db().prepare('SELECT * FROM workflow_templates WHERE name = ?').get(name) as
        | Row
        | undefined;
      return row ? toTemplate(row) : undefined;
    },
    async list() {
      return (deps.db().prepare('SELECT * FROM workflow_templates ORDER BY name').all() as Row[]).map(
        toTemplate,
      );
    },
    async insert(name, definition) {
      const now = deps.clock.now();
      deps
        .db()
        .prepare(
          'INSERT INTO workflow_templates (name, description, definition, revision, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)',
        )
        .run(name, definition.description, JSON.stringify(definition), now, now);
      return (await store.get(name))!;
    },
    async replace(name, definition) {
      deps
        .db()
        .prepare(
          'UPDATE workflow_templates SET description = ?, definition = ?, revision = revision + 1, updated_at = ? WHERE name = ?',
        )
        .run(definition.description, JSON.stringify(definition), deps.clock.now(), name);
      return (await store.get(name))!;
    },
    async delete(name) {
      return deps.db().prepare('DELETE FROM workflow_templates WHERE name = ?').run(name).changes > 0;
    },
  };
  return store;
}
