/**
 * A CLI command for every tool with a `cli` binding. Options come from the input schema:
 * `session_id` → `--session-id <value>`, booleans → flags, numbers parsed and checked by name.
 * Every such command takes `--json` (and `--format text|json`); without it the binding's text
 * renderer (or a readable default) prints.
 * @module
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { z } from 'zod';
import { SvcError } from '../../errors';
import { callTool } from '../../tools/core/call-tool';
import { conversionIssue, invalidInput } from '../../tools/core/input-issues';
import type { AnyTool, CliBinding, InputIssue } from '../../tools/core/types';
import { renderText } from '../../util/render-text';
import { objectFields, unwrapSchema } from '../../util/zod-shape';
import type { CliContext } from './context';

export function ensureCommand(program: Command, path: string[], description?: string): Command {
  let node = program;
  for (const [index, word] of path.entries()) {
    let child = node.commands.find((c) => c.name() === word);
    if (!child) {
      child = node.command(word);
      if (index < path.length - 1) child.description(`${word} commands`);
    }
    node = child;
  }
  if (description) node.description(description);
  return node;
}

/**
 * Registers the tools' commands. With `commandWord` (the first command word of the argv about to
 * be parsed, e.g. `run`), the commands that start with another word get their name, description
 * and arguments but no options or action: this process will not parse them, and their options
 * come from the tool's input schema, which is built on first read (issue 17: `svc run` builds
 * none of them). The command list, help and unknown-command suggestions stay the same.
 */
export function registerToolCommands(
  program: Command,
  ctx: CliContext,
  tools: readonly AnyTool[],
  commandWord?: string,
): void {
  for (const tool of tools) {
    const cli = tool.surfaces?.cli;
    for (const binding of Array.isArray(cli) ? cli : cli ? [cli] : []) {
      const parsed = commandWord === undefined || binding.command.split(' ')[0] === commandWord;
      registerOne(program, ctx, tool, binding, parsed);
    }
  }
}

function registerOne(
  program: Command,
  ctx: CliContext,
  tool: AnyTool,
  binding: CliBinding,
  parsed: boolean,
): void {
  {
    const command = ensureCommand(
      program,
      binding.command.split(' '),
      binding.description ?? firstSentence(tool.description),
    );
    const positional = (binding.args ?? []).map((a) => ({
      name: a.replace(/\?$/, ''),
      optional: a.endsWith('?'),
    }));
    for (const arg of positional) command.argument(arg.optional ? `[${arg.name}]` : `<${arg.name}>`);
    if (!parsed) return;
    const fields = objectFields(tool.input);
    for (const [name, field] of Object.entries(fields)) {
      if (positional.some((p) => p.name === name) || binding.fixed?.[name] !== undefined) continue;
      command.addOption(optionFor(name, field));
    }
    command.option('--json', 'print JSON (the same payload as the HTTP and MCP surfaces)');
    if (!fields.format) {
      command.addOption(new Option('--format <format>', 'output format').choices(['text', 'json']));
    }
    command.action(async (...args: unknown[]) => {
      const opts = (args[positional.length] ?? {}) as Record<string, unknown>;
      const input: Record<string, unknown> = {};
      positional.forEach((p, i) => {
        if (args[i] !== undefined) input[p.name] = args[i];
      });
      const issues: InputIssue[] = [];
      for (const [name, field] of Object.entries(fields)) {
        const key = camel(name);
        if (opts[key] !== undefined && !positional.some((p) => p.name === name)) {
          const converted = convert(name, field as z.ZodType, opts[key]);
          if ('issue' in converted) issues.push(converted.issue);
          else input[name] = converted.value;
        }
      }
      if (issues.length) throw invalidInput(tool.name, issues);
      Object.assign(input, binding.fixed ?? {});
      const prepared = binding.prepare ? binding.prepare(input) : input;
      const asJson =
        opts.json === true ||
        opts.format === 'json' ||
        (fields.format !== undefined && opts.format === 'json');
      await runToolCommand(ctx, tool, binding, prepared, asJson);
    });
  }
}

async function runToolCommand(
  ctx: CliContext,
  tool: AnyTool,
  binding: CliBinding,
  input: Record<string, unknown>,
  asJson: boolean,
) {
  if (binding.standalone) {
    const globals = ctx.globals();
    const workspace = resolve(globals.cwd ?? ctx.io.cwd);
    const sources = { workspace, env: ctx.io.env, configFile: globals.config, overrides: globals.c ?? [] };
    return print(ctx, binding, await binding.standalone(input, sources), input, asJson);
  }
  const app = await ctx.app();
  const notice = binding.notice?.(input, { app });
  if (notice) ctx.io.stderr.write(`svc: ${notice}\n`);
  const outcome = await callTool(
    app,
    tool.name,
    input,
    { surface: 'cli', signal: ctx.io.signal },
    { tool, ungated: binding.ungated },
  );
  if (!outcome.ok) {
    if (outcome.stage === 'gate' || outcome.stage === 'unknown') {
      const reason = outcome.error.details?.reason;
      throw new SvcError(
        'unavailable',
        `${tool.name} is not available: ${typeof reason === 'string' ? reason : 'not registered'}`,
      );
    }
    throw outcome.error;
  }
  const { input: parsed, value: payload } = outcome;
  const result = app.redactor.value(
    binding.envelope ? await binding.envelope(payload, { app, input: parsed }) : payload,
  );
  print(ctx, binding, result, parsed, asJson);
}

function print(ctx: CliContext, binding: CliBinding, result: unknown, input: unknown, asJson: boolean) {
  if (asJson) ctx.json(result);
  else ctx.out(binding.text ? binding.text(result, input) : renderText(result));
  const code = binding.exitCode?.(result);
  if (code) ctx.exitCode = code;
}

function optionFor(name: string, field: z.ZodType): Option {
  const inner = unwrapSchema(field);
  const flag = `--${kebab(name)}`;
  const description = field.description ?? inner.description ?? '';
  if (inner instanceof z.ZodBoolean) return new Option(flag, description);
  if (inner instanceof z.ZodArray) return new Option(`${flag} <values...>`, description);
  const option = new Option(`${flag} <${inner instanceof z.ZodNumber ? 'n' : 'value'}>`, description);
  if (inner instanceof z.ZodEnum) option.choices(inner.options as string[]);
  return option;
}

/** An option's text as the field's type; a number that does not parse is an input issue. */
function convert(name: string, field: z.ZodType, value: unknown): { value: unknown } | { issue: InputIssue } {
  const inner = unwrapSchema(field);
  if (inner instanceof z.ZodNumber) {
    const n = Number(value);
    if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n)) {
      return { issue: conversionIssue(name, 'number', value) };
    }
    return { value: n };
  }
  if (inner instanceof z.ZodArray && Array.isArray(value))
    return { value: value.flatMap((v) => String(v).split(',')) };
  return { value };
}

const kebab = (s: string) => s.replace(/_/g, '-');
const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const firstSentence = (s: string) => s.split(/(?<=\.)\s/)[0];
