/**
 * `workflow_templates` on PostgreSQL (issue 18): the twin of ./template-store.ts, the same
 * answers (templates by name in byte order, the definition JSON parsed, revision counting
 * replacements; inserting an existing name fails, as on SQLite).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import type { TemplateStore, WorkflowTemplate } from './template-store';

type Row = Omit<WorkflowTemplate, 'definition'> & { definition: string };

const COLUMNS = 'name, description, definition, revision, created_at, updated_at';

export function createPostgresTemplateStore(deps: { sql: SqlClient; clock: Clock; ids: Ids }): TemplateStore {
  const { sql } = deps;
  const toTemplate = (row: Row): WorkflowTemplate => ({ ...row, definition: JSON.parse(row.definition) });
  const get = async (name: string) => {
    const row = await sql.one<Row>(`SELECT ${COLUMNS} FROM workflow_templates WHERE name = $1`, [name]);
    return row ? toTemplate(row) : undefined;
  };
  const required = async (name: string) => {
    const template = await get(name);
    if (!template) throw new Error(`workflow template ${name} vanished`);
    return template;
  };
  return {
    get,
    list: async () =>
      (await sql.query<Row>(`SELECT ${COLUMNS} FROM workflow_templates ORDER BY name COLLATE "C"`)).map(
        toTemplate,
      ),
    async insert(name, definition) {
      const now = deps.clock.now();
      await sql.run(
        'INSERT INTO workflow_templates (name, description, definition, revision, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $5)',
        [name, definition.description, JSON.stringify(definition), now, now],
      );
      return await required(name);
    },
    async replace(name, definition) {
      await sql.run(
        'UPDATE workflow_templates SET description = $1, definition = $2, revision = revision + 1, updated_at = $3 WHERE name = $4',
        [definition.description, JSON.stringify(definition), deps.clock.now(), name],
      );
      return await required(name);
    },
    delete: async (name) => (await sql.run('DELETE FROM workflow_templates WHERE name = $1', [name])) > 0,
  };
}
