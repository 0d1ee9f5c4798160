import type { Migration } from './types';

/**
 * Remote agents (A2A), deployments, plugins and contracts (ids 700–749): 700–709 A2A,
 * 710–719 deploy, 720–729 plugins, 730–739 contracts.
 */
export const remoteMigrations: Migration[] = [
  {
    id: 700,
    name: 'a2a delegated tasks',
    sql: `
      -- Tasks this process delegated to remote A2A agents (a2a_delegate), until delete_a2a_task.
      -- message and result_text are what was sent and answered (redacted before they are stored).
      CREATE TABLE a2a_tasks (
        id TEXT PRIMARY KEY,
        session_id TEXT,
        run_id TEXT,
        target_kind TEXT NOT NULL,
        target TEXT NOT NULL,
        card_url TEXT NOT NULL,
        agent_name TEXT NOT NULL DEFAULT '',
        rpc_url TEXT NOT NULL,
        remote_task_id TEXT,
        context_id TEXT,
        state TEXT NOT NULL,
        message TEXT NOT NULL DEFAULT '',
        result_text TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX a2a_tasks_session ON a2a_tasks(session_id, created_at);
    `,
  },
  {
    id: 701,
    name: 'a2a known agent cards',
    sql: `
      -- Agent cards fetched and validated, by card URL: what a capability search matches against.
      CREATE TABLE a2a_cards (
        card_url TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        rpc_url TEXT NOT NULL,
        skills TEXT NOT NULL DEFAULT '[]',
        card TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        fetched_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 702,
    name: 'a2a served tasks',
    sql: `
      -- Tasks this process serves as an A2A agent: the task id is the run id, the context a session.
      CREATE TABLE a2a_served_tasks (
        task_id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX a2a_served_tasks_context ON a2a_served_tasks(context_id);
    `,
  },
  {
    id: 710,
    name: 'deployments',
    sql: `
      -- Named agents deployed as long-running svc HTTP services. The token itself lives in the
      -- credential store; token_ref names the entry. overrides are the -c settings it runs with.
      CREATE TABLE deployments (
        name TEXT PRIMARY KEY,
        fleet TEXT,
        target TEXT NOT NULL DEFAULT 'local',
        agent TEXT NOT NULL,
        model TEXT,
        tools TEXT NOT NULL DEFAULT '{}',
        skills TEXT NOT NULL DEFAULT '[]',
        url TEXT,
        pid INTEGER,
        token_ref TEXT NOT NULL,
        data_dir TEXT NOT NULL,
        overrides TEXT NOT NULL DEFAULT '[]',
        log_path TEXT NOT NULL,
        status TEXT NOT NULL,
        health TEXT NOT NULL DEFAULT 'unknown',
        last_error TEXT,
        checked_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 720,
    name: 'plugins',
    sql: `
      -- Installed plugins (content under <data dir>/plugins/<name>) and every install, update and
      -- removal with who approved it.
      CREATE TABLE plugins (
        name TEXT PRIMARY KEY,
        version TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        source_type TEXT NOT NULL,
        source TEXT NOT NULL,
        commit_sha TEXT,
        dir TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '{}',
        installed_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE plugin_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        action TEXT NOT NULL,
        version TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        by TEXT NOT NULL DEFAULT '',
        session_id TEXT,
        at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 730,
    name: 'contracts',
    sql: `
      -- Obligations attached to a session (workspace ones live in [contracts] config), the results
      -- of each evaluation, and waivers. scope is a session id, or '' for the workspace contract.
      CREATE TABLE contract_obligations (
        scope TEXT NOT NULL,
        obligation_id TEXT NOT NULL,
        spec TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (scope, obligation_id)
      );
      CREATE TABLE contract_results (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope TEXT NOT NULL,
        obligation_id TEXT NOT NULL,
        origin TEXT NOT NULL,
        kind TEXT NOT NULL,
        command TEXT,
        status TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        exit_code INTEGER,
        duration_ms INTEGER,
        ran_at INTEGER NOT NULL
      );
      CREATE INDEX contract_results_obligation ON contract_results(scope, obligation_id, id);
      CREATE INDEX contract_results_command ON contract_results(command, id);
      CREATE TABLE contract_waivers (
        scope TEXT NOT NULL,
        obligation_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        by TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (scope, obligation_id)
      );
    `,
  },
];
