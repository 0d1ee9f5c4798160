/**
 * `[permissions]`: which tools and commands run without a prompt, and what an unattended prompt does.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { toolList } from './shared';

export const permissionsSchema = lazy(() =>
  z.strictObject({
    allowed_tools: toolList().default([]).describe('Only skips permission prompts for the named tools.'),
    bash_allow: z.array(z.string()).default([]).describe('Command prefixes auto-allowed after parsing.'),
    bash_deny: z
      .array(z.string())
      .default([])
      .describe(
        'Commands blocked outright: word prefixes matched against every parsed command (e.g. "git push").',
      ),
    auto_allow_read_only_bash: z
      .boolean()
      .default(true)
      .describe('Let bash commands that analysis finds read-only run without a prompt.'),
    allow_outside_workspace: z
      .boolean()
      .default(false)
      .describe('Let file tools and bash reach paths outside the workspace (after asking).'),
    unattended: z
      .enum(['fail', 'wait'])
      .default('fail')
      .describe(
        'A permission prompt with no surface attached: fail the tool call at once (default) or wait for one to attach and answer. svc run always fails.',
      ),
    wait_timeout_s: z
      .number()
      .positive()
      .default(86_400)
      .describe(
        'On the PostgreSQL store, how long a run waits for the answer to a stored permission request (any node may answer; it survives the death of the node) before the wait ends as a deny. Default: one day. On SQLite a request waits until answered or cancelled.',
      ),
  }),
);
