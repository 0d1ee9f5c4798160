/**
 * Quality gates posture (`quality_gates_posture`): the checks in force and how they last went.
 * Gates are the contract's command obligations (enforced: contract_rerun runs them) and the
 * project's own check scripts found in the workspace (detected: package.json scripts such as
 * test, lint, typecheck; Makefile test/lint/check targets; cargo and go test). A detected gate
 * that a contract obligation already runs is listed once, as that obligation.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContractService, ObligationResult } from './contract-service';

export const QUALITY_GATES_SCHEMA = 'svc.quality_gates_posture.v1';

export interface QualityGate {
  id: string;
  source: 'contract' | 'package_script' | 'makefile' | 'toolchain';
  /** contract: enforced by contract_rerun; the others are detected but not enforced. */
  enforced: boolean;
  command: string;
  /** The contract's status for enforced gates (passed, failed, waived, pending, disabled). */
  status: string;
  last_result: Pick<ObligationResult, 'status' | 'exit_code' | 'duration_ms' | 'ran_at'> | null;
  /** Where a detected gate was found (package.json script name, Makefile target). */
  detected_from: string | null;
}

export interface QualityGatesPosture {
  schema_version: string;
  session_id: string | null;
  gates: QualityGate[];
  summary: {
    total: number;
    enforced: number;
    passing: number;
    failing: number;
    unknown: number;
    waived: number;
  };
  package_manager: string | null;
  warnings: string[];
}

const SCRIPT =
  /^(test|tests|lint|typecheck|type-check|check|build|e2e|format:check|fmt:check|lint:.*|test:.*)$/;

export async function qualityGatesPosture(
  workspace: string,
  contracts: ContractService,
  sessionId?: string,
): Promise<QualityGatesPosture> {
  const warnings: string[] = [];
  const contract = await contracts.list(sessionId);
  const gates: QualityGate[] = contract.obligations
    .filter((o) => o.kind === 'command')
    .map((o) => ({
      id: o.id,
      source: 'contract',
      enforced: o.status !== 'disabled',
      command: String(o.spec.command),
      status: o.status,
      last_result: o.last_result ? pick(o.last_result) : null,
      detected_from: null,
    }));
  const enforcedCommands = new Set(gates.map((g) => normalize(g.command)));
  const detected = detect(workspace, warnings);
  for (const gate of detected.gates) {
    const existing = gates.find((g) => normalize(g.command) === normalize(gate.command));
    if (existing) {
      existing.detected_from ??= gate.detected_from;
      continue;
    }
    if (enforcedCommands.has(normalize(gate.command))) continue;
    const last = await contracts.latestForCommand(gate.command);
    gates.push({ ...gate, status: last ? last.status : 'unknown', last_result: last ? pick(last) : null });
  }
  const summary = { total: gates.length, enforced: 0, passing: 0, failing: 0, unknown: 0, waived: 0 };
  for (const gate of gates) {
    if (gate.enforced) summary.enforced++;
    if (gate.status === 'waived') summary.waived++;
    else if (gate.last_result?.status === 'passed') summary.passing++;
    else if (gate.last_result?.status === 'failed') summary.failing++;
    else summary.unknown++;
  }
  if (gates.length === 0)
    warnings.push(
      'no quality gates: add [contracts.<id>] kind = "command" obligations or project check scripts',
    );
  return {
    schema_version: QUALITY_GATES_SCHEMA,
    session_id: contract.session_id,
    gates,
    summary,
    package_manager: detected.packageManager,
    warnings,
  };
}

function detect(
  workspace: string,
  warnings: string[],
): { gates: Omit<QualityGate, 'status' | 'last_result'>[]; packageManager: string | null } {
  const gates: Omit<QualityGate, 'status' | 'last_result'>[] = [];
  let packageManager: string | null = null;
  const packageJson = join(workspace, 'package.json');
  if (existsSync(packageJson)) {
    packageManager = existsSync(join(workspace, 'pnpm-lock.yaml'))
      ? 'pnpm'
      : existsSync(join(workspace, 'yarn.lock'))
        ? 'yarn'
        : existsSync(join(workspace, 'bun.lockb')) || existsSync(join(workspace, 'bun.lock'))
          ? 'bun'
          : 'npm';
    try {
      const scripts =
        (JSON.parse(readFileSync(packageJson, 'utf8')) as { scripts?: Record<string, unknown> }).scripts ??
        {};
      for (const name of Object.keys(scripts).sort()) {
        if (!SCRIPT.test(name) || typeof scripts[name] !== 'string') continue;
        const command =
          packageManager === 'npm'
            ? name === 'test'
              ? 'npm test'
              : `npm run ${name}`
            : `${packageManager} run ${name}`;
        gates.push({
          id: `script:${name}`,
          source: 'package_script',
          enforced: false,
          command,
          detected_from: `package.json scripts.${name}`,
        });
      }
    } catch (error) {
      warnings.push(`package.json could not be read: ${(error as Error).message}`);
    }
  }
  const makefile = join(workspace, 'Makefile');
  if (existsSync(makefile)) {
    const targets = new Set(
      [...readFileSync(makefile, 'utf8').matchAll(/^([A-Za-z][\w-]*):/gm)].map((m) => m[1]),
    );
    for (const target of ['test', 'check', 'lint']) {
      if (targets.has(target))
        gates.push({
          id: `make:${target}`,
          source: 'makefile',
          enforced: false,
          command: `make ${target}`,
          detected_from: `Makefile target ${target}`,
        });
    }
  }
  if (existsSync(join(workspace, 'Cargo.toml')))
    gates.push({
      id: 'cargo:test',
      source: 'toolchain',
      enforced: false,
      command: 'cargo test',
      detected_from: 'Cargo.toml',
    });
  if (existsSync(join(workspace, 'go.mod')))
    gates.push({
      id: 'go:test',
      source: 'toolchain',
      enforced: false,
      command: 'go test ./...',
      detected_from: 'go.mod',
    });
  return { gates, packageManager };
}

function pick(result: ObligationResult) {
  return {
    status: result.status,
    exit_code: result.exit_code,
    duration_ms: result.duration_ms,
    ran_at: result.ran_at,
  };
}

function normalize(command: string): string {
  return command
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/^npm run test$/, 'npm test');
}
