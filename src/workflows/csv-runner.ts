/**
 * spawn_agents_on_csv: one sub-agent per CSV row. The prompt template names columns
 * (`{{ column }}`; a header with other characters is also reachable as its slug, e.g.
 * `First name` → `{{ first_name }}`; `{{ row_number }}` is the 1-based row). Rows run in parallel
 * up to `max_parallel` as sub-agents of the fan-out's pipeline run; every answer is collected into
 * a CSV or JSON file in the workspace, written through the file tools' pipeline (guards, history).
 * @module
 */
import { chmodSync, existsSync, statSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError, toSvcError } from '../errors';
import type { Redactor } from '../redact';
import type { OpContext } from '../workspace/context';
import { readTarget } from '../workspace/file-load';
import { realpathOfDeepest } from '../workspace/paths';
import type { Workspace } from '../workspace/workspace';
import { type CsvTable, parseCsv, toCsv } from './csv';
import { mapBounded } from './dag';
import type { Caller } from './lineage';
import type { Pipeline } from './pipeline';
import { renderTemplate, templateRefs } from './template';
import type { WorkflowRun } from './workflow-runs';
import type { WorkflowService } from './workflow-service';

const MAX_CSV_BYTES = 5 * 1024 * 1024;

export interface CsvFanOutInput {
  csv_path?: string;
  csv?: string;
  prompt: string;
  agent: string;
  tools?: string[];
  max_parallel?: number;
  max_rows: number;
  max_turns?: number;
  output_path?: string;
  format?: 'csv' | 'json';
  overwrite: boolean;
}

export interface CsvRowResult {
  row: number;
  input: Record<string, string>;
  status: 'completed' | 'failed' | 'cancelled';
  output: string;
  error: string | null;
  run_id: string | null;
  session_id: string | null;
}

export interface CsvFanOutResult {
  csv_run_id: string;
  status: WorkflowRun['status'];
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  family_session_id: string;
  rows: number;
  completed: number;
  failed: number;
  output_path: string;
  format: 'csv' | 'json';
  results: CsvRowResult[];
  error: string | null;
  warnings: string[];
}

const slugOf = (header: string) =>
  header
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');

/** What a CSV fan-out uses: the workspace's paths and files, the config's defaults, the redactor. */
export interface CsvRunnerDeps {
  readonly config: Pick<Config, 'options'>;
  readonly ws: Pick<Workspace, 'paths' | 'files'>;
  readonly redactor: Pick<Redactor, 'string'>;
}

export async function spawnAgentsOnCsv(
  deps: CsvRunnerDeps,
  workflows: Pick<WorkflowService, 'start'>,
  caller: Caller,
  input: CsvFanOutInput,
  approve: OpContext['approve'],
): Promise<CsvFanOutResult> {
  if ((input.csv_path === undefined) === (input.csv === undefined)) {
    throw new SvcError(
      'invalid_input',
      'give exactly one of csv_path (a workspace file) or csv (the CSV text)',
    );
  }
  const table = readTable(deps, input);
  if (table.rows.length === 0)
    throw new SvcError('invalid_input', `${input.csv_path ? 'csv_path' : 'csv'}: no rows under the header`);
  if (table.rows.length > input.max_rows) {
    throw new SvcError(
      'invalid_input',
      `${input.csv_path ? 'csv_path' : 'csv'}: ${table.rows.length} rows, more than max_rows (${input.max_rows}); split the file or raise max_rows (at most 500)`,
    );
  }
  const columns = new Map<string, string>();
  for (const header of table.headers) {
    columns.set(header, header);
    const slug = slugOf(header);
    if (slug && !columns.has(slug)) columns.set(slug, header);
  }
  const unknown = templateRefs(input.prompt).filter((ref) => ref !== 'row_number' && !columns.has(ref));
  if (unknown.length) {
    throw new SvcError(
      'invalid_input',
      `prompt: ${unknown.map((u) => `{{ ${u} }}`).join(', ')} ${unknown.length > 1 ? 'are not columns' : 'is not a column'}; columns: ${table.headers.join(', ')} (or {{ row_number }})`,
    );
  }
  const output = outputTarget(deps, input);
  // Overwriting follows the write tool's rule: an agent's session must have read the file first.
  if (output.exists && caller.sessionId) {
    await deps.ws.files.loadForEdit(
      output.rel,
      { tool: 'spawn_agents_on_csv', sessionId: caller.sessionId, signal: caller.signal },
      'output_path',
    );
  }
  const maxParallel = input.max_parallel ?? deps.config.options.workflows.max_parallel;
  const pipeline = await workflows.start(caller, {
    kind: 'csv',
    name: input.csv_path ?? 'inline csv',
    title: `csv: ${table.rows.length} agents${input.csv_path ? ` over ${input.csv_path}` : ''}`,
    request: `Run one sub-agent per row of ${input.csv_path ?? 'the given CSV'} (${table.rows.length} rows, at most ${maxParallel} at once), results to ${output.rel}.\nPrompt template:\n${input.prompt}`,
    input: {
      csv_path: input.csv_path ?? null,
      rows: table.rows.length,
      prompt: input.prompt,
      output_path: output.rel,
      format: output.format,
    },
  });
  let failure: string | null = null;
  let results: CsvRowResult[] = [];
  try {
    results = await mapBounded(table.rows, maxParallel, (row, index) =>
      runRow(deps, pipeline, input, columns, row, index),
    );
    await writeResults(deps, { pipeline, caller, approve }, input, table, output, results);
  } catch (error) {
    failure = deps.redactor.string(toSvcError(error).message);
  }
  const completed = results.filter((r) => r.status === 'completed').length;
  const failed = results.length - completed;
  const status = failure || failed ? (pipeline.signal.aborted ? 'cancelled' : 'failed') : 'completed';
  const error = failure ?? (failed ? `${failed} of ${results.length} rows did not complete` : null);
  const row = await pipeline.finish({
    status,
    error,
    text: `${completed} of ${table.rows.length} rows completed; results in ${output.rel}.${error ? `\nError: ${error}` : ''}`,
    result: {
      output_path: output.rel,
      format: output.format,
      completed,
      failed,
      rows: results,
      warnings: pipeline.warnings,
    },
  });
  return {
    csv_run_id: pipeline.id,
    status: row.status,
    session_id: pipeline.sessionId,
    run_id: pipeline.runId,
    parent_run_id: pipeline.parentRunId,
    family_session_id: pipeline.familySessionId,
    rows: table.rows.length,
    completed,
    failed,
    output_path: output.rel,
    format: output.format,
    results,
    error: row.error ?? error,
    warnings: pipeline.warnings,
  };
}

async function runRow(
  deps: Pick<CsvRunnerDeps, 'redactor'>,
  pipeline: Pipeline,
  input: CsvFanOutInput,
  columns: Map<string, string>,
  row: Record<string, string>,
  index: number,
): Promise<CsvRowResult> {
  const result: CsvRowResult = {
    row: index + 1,
    input: row,
    status: 'failed',
    output: '',
    error: null,
    run_id: null,
    session_id: null,
  };
  try {
    const prompt = renderTemplate(
      input.prompt,
      (ref) => (ref === 'row_number' ? String(index + 1) : row[columns.get(ref) ?? '']),
      'prompt',
    );
    const run = await pipeline.child({
      prompt,
      agent: input.agent,
      tools: input.tools,
      maxSteps: input.max_turns,
      title: `row ${index + 1}`,
      metadata: { csv_row: index + 1 },
      field: 'spawn_agents_on_csv',
    });
    result.run_id = run.run_id;
    result.session_id = run.session_id;
    result.output = run.text;
    result.status =
      run.status === 'completed' ? 'completed' : run.status === 'failed' ? 'failed' : 'cancelled';
    if (run.status !== 'completed') {
      result.error = `the run ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.error ? `: ${run.error}` : ''}`;
    }
  } catch (error) {
    result.status = pipeline.signal.aborted ? 'cancelled' : 'failed';
    result.error = deps.redactor.string(toSvcError(error).message);
  }
  return result;
}

/** Collect every row's answer into the output file, through the file tools' pipeline. */
async function writeResults(
  deps: CsvRunnerDeps,
  x: { pipeline: Pipeline; caller: Caller; approve: OpContext['approve'] },
  input: CsvFanOutInput,
  table: CsvTable,
  output: ReturnType<typeof outputTarget>,
  results: CsvRowResult[],
): Promise<void> {
  const { pipeline } = x;
  const content =
    output.format === 'json'
      ? `${JSON.stringify({ source: input.csv_path ?? null, prompt: input.prompt, rows: results }, null, 2)}\n`
      : toCsv(
          [
            'agent_row',
            ...table.headers,
            'agent_status',
            'agent_output',
            'agent_error',
            'agent_run_id',
            'agent_session_id',
          ],
          results.map((r) => ({
            ...r.input,
            agent_row: r.row,
            agent_status: r.status,
            agent_output: r.output,
            agent_error: r.error ?? '',
            agent_run_id: r.run_id ?? '',
            agent_session_id: r.session_id ?? '',
          })),
        );
  // The caller's session, not the pipeline's: overwriting needs what the write tool needs (the
  // caller read the file as it is now; an operator's own call has no session and no such rule).
  const opContext: OpContext = {
    tool: 'spawn_agents_on_csv',
    sessionId: x.caller.sessionId,
    runId: pipeline.runId,
    signal: x.caller.signal,
    approve: x.approve,
  };
  await deps.ws.files.write({ path: output.rel, content: deps.redactor.string(content) }, opContext);
  // A data file: never keep the execute bits of a file it replaced.
  chmodSync(realpathOfDeepest(output.abs), 0o644);
}

/** `.git` (hooks, config) and svc's own configuration: never a results file. */
function reservedOutput(rel: string): boolean {
  const parts = rel.split(/[\\/]/);
  return parts.includes('.git') || parts.includes('.svc') || parts.at(-1) === 'svc.toml';
}

function readTable(deps: Pick<CsvRunnerDeps, 'ws'>, input: CsvFanOutInput): CsvTable {
  if (input.csv !== undefined) return parseCsv(input.csv, 'csv');
  const target = deps.ws.paths.resolve(input.csv_path!, 'csv_path');
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(target.abs);
  } catch {
    throw new SvcError('not_found', `csv_path: no file ${target.rel}`);
  }
  if (!stat.isFile()) throw new SvcError('invalid_input', `csv_path: ${target.rel} is not a file`);
  if (stat.size > MAX_CSV_BYTES) {
    throw new SvcError(
      'invalid_input',
      `csv_path: ${target.rel} is ${stat.size} bytes, more than ${MAX_CSV_BYTES}`,
    );
  }
  return parseCsv(readTarget(target, 'csv_path').toString('utf8'), `csv_path ${target.rel}`);
}

function outputTarget(deps: Pick<CsvRunnerDeps, 'ws'>, input: CsvFanOutInput) {
  const defaultPath = input.csv_path
    ? join(
        dirname(input.csv_path),
        `${basename(input.csv_path, extname(input.csv_path))}.results.${input.format ?? 'csv'}`,
      )
    : `agents-on-csv.results.${input.format ?? 'csv'}`;
  const target = deps.ws.paths.resolve(input.output_path ?? defaultPath, 'output_path');
  const format = input.format ?? (extname(target.rel).toLowerCase() === '.json' ? 'json' : 'csv');
  if (reservedOutput(target.rel) || reservedOutput(deps.ws.paths.display(realpathOfDeepest(target.abs)))) {
    throw new SvcError(
      'forbidden',
      `output_path: ${target.rel} is in .git or svc's configuration (svc.toml, .svc/); write the results elsewhere`,
    );
  }
  const exists = existsSync(target.abs);
  if (exists) {
    if (statSync(target.abs).isDirectory()) {
      throw new SvcError('invalid_input', `output_path: ${target.rel} is a directory; give a file path`);
    }
    if (!input.overwrite) {
      throw new SvcError(
        'conflict',
        `output_path: ${target.rel} already exists; set overwrite: true or choose another path`,
      );
    }
  }
  if (input.csv_path && deps.ws.paths.resolve(input.csv_path, 'csv_path').abs === target.abs) {
    throw new SvcError('invalid_input', 'output_path: is the input file itself; choose another path');
  }
  return { target, abs: target.abs, rel: target.rel, format, exists };
}
