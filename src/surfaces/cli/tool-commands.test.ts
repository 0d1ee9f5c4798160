import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../tools/core/define-tool';
import type { CliContext } from './context';
import { registerToolCommands } from './tool-commands';

describe('registerToolCommands', () => {
  it('builds the input schema only of the commands the argv names', () => {
    const built: string[] = [];
    const tool = (name: string, command: string) =>
      defineTool({
        name,
        family: 'test',
        tag: 'primitive',
        description: `${name}.`,
        input: () => {
          built.push(name);
          return z.strictObject({ session_id: z.string().optional() });
        },
        mutates: false,
        surfaces: { cli: { command, args: [] } },
        run: () => ({}),
      });
    const tools = [tool('a', 'alpha list'), tool('b', 'beta show')];
    const program = new Command('svc');
    const ctx: CliContext = {
      io: { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: '/' },
      program,
      globals: () => ({}),
      app: () => Promise.reject(new Error('no app in this test')),
      out: () => {},
      json: () => {},
    };
    registerToolCommands(program, ctx, tools, 'beta');
    expect(built).toEqual(['b']);
    // Every command is still listed (help, unknown-command suggestions).
    expect(program.commands.map((c) => c.name())).toEqual(['alpha', 'beta']);
    const beta = program.commands[1].commands[0];
    expect(beta.options.map((o) => o.long)).toContain('--session-id');

    // Without a command word (help, the command list) every command gets its options.
    registerToolCommands(new Command('svc'), ctx, tools);
    expect(built).toEqual(['b', 'a']);
  });
});
