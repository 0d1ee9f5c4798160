/**
 * The models that run a child process: a vendor CLI (claude, codex, gemini) or an ACP agent.
 * The binary must be on the PATH the child gets.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import { AcpLanguageModel } from './acp';
import type { ModelBuild } from './build-request';
import { whichBinary } from './process-model';
import { CLI_KINDS, type CliKind, cliCommand, isCliKind, VendorCliLanguageModel } from './vendor-cli';

/** A vendor CLI as the model; its kind from the entry, else guessed from the command. */
export async function vendorCliModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId } = build.request;
  const kind = (entry.cli_kind ?? entry.config?.type) as CliKind;
  const cli: CliKind = isCliKind(kind) ? kind : guessKind(entry.config?.command);
  const command = cliCommand(cli, deps.config().auth, entry.config?.command);
  const path = whichBinary(command, deps.env, deps.workspace);
  if (!path)
    throw new SvcError(
      'unavailable',
      `${entry.id}: ${CLI_KINDS[cli].name} is not installed (\`${command}\` is not on PATH); check with svc auth ${cli}`,
    );
  return new VendorCliLanguageModel(entry.id, modelId, {
    kind: cli,
    path,
    args: entry.config?.args,
    env: deps.env,
    cwd: deps.workspace,
  });
}

/** An ACP child agent as the model. */
export async function acpModel(build: ModelBuild): Promise<LanguageModelV3> {
  const { deps, entry, modelId } = build.request;
  const command = entry.config?.command;
  const path = command ? whichBinary(command, deps.env, deps.workspace) : undefined;
  if (!path)
    throw new SvcError(
      'unavailable',
      `${entry.id}: the ACP child agent \`${command ?? '(no command)'}\` is not found; set providers.${entry.id}.command`,
    );
  return new AcpLanguageModel(entry.id, modelId, {
    path,
    args: entry.config?.args ?? [],
    env: deps.env,
    cwd: deps.workspace,
  });
}

function guessKind(command: string | undefined): CliKind {
  const base = (command ?? '').split('/').pop() ?? '';
  if (base.includes('codex')) return 'codex';
  if (base.includes('gemini')) return 'gemini';
  return 'claude';
}
