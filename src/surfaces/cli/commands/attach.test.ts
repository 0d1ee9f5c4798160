import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../../../test/helpers/tmp-workspace';
import type { CliContext } from '../context';
import { checkpointPrompts } from './attach';

const ctxFor = (cwd: string, c: string[] = []) =>
  ({ globals: () => ({ c }), io: { cwd, env: { HOME: cwd } } }) as unknown as CliContext;

describe('svc attach', () => {
  it('takes tui.checkpoint_prompts from the local config, on by default and when the config does not load', async () => {
    expect(await checkpointPrompts(ctxFor(tmpWorkspace()))).toBe(true);
    const off = tmpWorkspace({ files: { 'svc.toml': '[tui]\ncheckpoint_prompts = false\n' } });
    expect(await checkpointPrompts(ctxFor(off))).toBe(false);
    expect(await checkpointPrompts(ctxFor(tmpWorkspace(), ['tui.checkpoint_prompts=false']))).toBe(false);
    const broken = tmpWorkspace({ files: { 'svc.toml': '[tui\n' } });
    expect(await checkpointPrompts(ctxFor(broken))).toBe(true);
  });
});
