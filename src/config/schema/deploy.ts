/**
 * `[deploy]`: remote deploy targets and how a deploy waits for the service.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const deployTargetSchema = lazy(() =>
  z.strictObject({
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe(
        'Argv prefix that runs a command on the target machine, e.g. ["ssh", "-o", "SendEnv=SVC_HTTP_TOKEN", "build-box"]. The token travels in the SVC_HTTP_TOKEN environment variable.',
      ),
    host: z.string().min(1).describe('Address the deployed agents are reached at from here.'),
    listen_host: z.string().default('0.0.0.0').describe('Address the service listens on at the target.'),
    svc_command: z
      .array(z.string().min(1))
      .default(['svc'])
      .describe('How to run svc on the target (after the prefix).'),
    workspace: z
      .string()
      .optional()
      .describe('Workspace directory on the target (default: this workspace path).'),
    data_dir: z
      .string()
      .optional()
      .describe(
        'Base data directory on the target; each agent gets <data_dir>/<name> (default <workspace>/.svc/deploy).',
      ),
    description: z.string().optional(),
  }),
);

export const deploySchema = lazy(() =>
  z.strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Allow remote lifecycle operations (deploy targets other than local). Local deploys need no config.',
      ),
    targets: z
      .record(z.string(), deployTargetSchema())
      .default({})
      .describe('Remote deploy targets, by name.'),
    command: z
      .array(z.string().min(1))
      .optional()
      .describe('How to run svc for local deploys (default: this same svc binary).'),
    ready_timeout_seconds: z
      .number()
      .positive()
      .max(600)
      .default(30)
      .describe('How long a deploy waits for the service to listen and report ready.'),
  }),
);
