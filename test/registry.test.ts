/**
 * The registry against the spec's tool inventory (a copy of the contract's native-tools.tsv lives
 * in test/fixtures/spec/). Pins:
 * - every named tool is defined and, with its gate open, registered under its exact name;
 * - tags: exactly the eight workflow tools are workflow, everything else primitive;
 * - gates: lifecycle tools need SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS, packs tools need
 *   options.operating_packs, get_adaptive_orchestration needs adaptive orchestration enabled;
 * - removed names, submit_plan and file-picker/editor tools do not exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REMOVED_TOOL_NAMES } from '../src/tools/core/aliases';
import { invokeTool } from '../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from './helpers/make-test-app';
import { tmpWorkspace } from './helpers/tmp-workspace';

const rows = readFileSync(join(__dirname, 'fixtures/spec/native-tools.tsv'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'))
  .map((line) => {
    const [name, family, tag, note = ''] = line.split('\t');
    return { name, family, tag, note };
  });

const WORKFLOW = [
  'agent',
  'spawn_agents_on_csv',
  'agentic_fetch',
  'create_team',
  'execute_dag',
  'orchestrate_workflow',
  'deploy_agent',
  'deploy_fleet',
];
const LIFECYCLE = ['daemon_restart', 'autopilot_up', 'autopilot_down'];
const PACKS = [
  'session_set_pack',
  'session_clear_pack',
  'session_list_packs',
  'session_get_active_pack',
  'get_operating_mode',
];

async function openGates() {
  const ws = tmpWorkspace();
  return makeTestApp({
    workspace: ws,
    env: isolatedEnv(ws, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' }),
    config: {
      options: { operating_packs: true, adaptive_orchestration: { enabled: true } },
      lsp: { typescript: { command: 'typescript-language-server', args: ['--stdio'], extensions: ['ts'] } },
    },
  });
}

describe('the tool registry against the spec inventory', () => {
  it('TOOLS-05/GEN-08: every tool the spec names is registered under its exact name when its gate is open', async () => {
    const app = await openGates();
    const registered = new Set(app.tools.registered().map((t) => t.name));
    const missing = rows.map((r) => r.name).filter((name) => !registered.has(name));
    expect(missing).toEqual([]);
    expect(rows.length).toBeGreaterThan(140);
  });

  it('TOOLS-50/TOOLS-51: exactly the eight workflow tools are tagged workflow; the rest are primitive', async () => {
    const app = await openGates();
    const status = (await invokeTool(app, 'get_workflow_tools_status', {}, { surface: 'agent' })) as {
      tools: { name: string }[];
    };
    expect(status.tools.map((t) => t.name).sort()).toEqual([...WORKFLOW].sort());
    const primitive = (await invokeTool(app, 'get_primitive_tools_status', {}, { surface: 'agent' })) as {
      tools: { name: string }[];
    };
    const primitiveNames = primitive.tools.map((t) => t.name);
    for (const row of rows) {
      const tool = app.tools.get(row.name)!;
      expect(tool.tag, row.name).toBe(row.tag);
      if (row.tag === 'primitive') expect(primitiveNames).toContain(row.name);
    }
  });

  it('TOOLS-53: run_recipe and summarize_session are primitive', async () => {
    const app = await openGates();
    expect(app.tools.get('run_recipe')?.tag).toBe('primitive');
    expect(app.tools.get('summarize_session')?.tag).toBe('primitive');
  });

  it('TOOLS-26/TOOLS-27/TOOLS-28: status lifecycle tools are on by default; restart/up/down only with SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS', async () => {
    const plain = await makeTestApp();
    for (const name of ['daemon_status', 'autopilot_status', 'schedule_inspect'])
      expect(plain.tools.get(name), name).toBeDefined();
    for (const name of LIFECYCLE) expect(plain.tools.get(name), name).toBeUndefined();
    const open = await openGates();
    for (const name of LIFECYCLE) expect(open.tools.get(name), name).toBeDefined();
  });

  it('TOOLS-41/ADAPT-31: packs and adaptive tools are not registered with their gates off', async () => {
    const plain = await makeTestApp();
    for (const name of PACKS) expect(plain.tools.get(name), name).toBeUndefined();
    expect(plain.tools.get('get_adaptive_orchestration')).toBeUndefined();
    // diagnostics needs a language server: the funnel report says so.
    expect(plain.funnel().find((e) => e.name === 'diagnostics')).toMatchObject({
      registered: false,
      removed_by: 'gate',
    });
  });

  it('TOOLS-45/TOOLS-52/TOOLS-68: removed names, submit_plan and file-picker or editor tools do not exist', async () => {
    const app = await openGates();
    const names = app.tools.gates().map((g) => g.tool.name);
    for (const name of REMOVED_TOOL_NAMES) expect(names).not.toContain(name);
    expect(names.filter((n) => /picker|open_editor|editor_open|file_chooser/.test(n))).toEqual([]);
  });

  it('TOOLS-32/TOOLS-42/TOOLS-47/TOOLS-57: the named config, status, planning, session and plugin tools are registered', async () => {
    const app = await openGates();
    const families = [
      'config',
      'status',
      'planning',
      'sessions',
      'plugins',
      'runs',
      'checkpoints',
      'coordination',
    ];
    for (const row of rows.filter((r) => families.includes(r.family)))
      expect(app.tools.get(row.name), row.name).toBeDefined();
  });
});
