/**
 * A config error as it is shown before the App's redactor exists (the CLI's one line on stderr, a
 * start that fails): a value it quotes may be a secret, `max_steps = "${MY_API_KEY}"` quoting the
 * key (found by probing). The values interpolated from the environment and those of variables
 * named like secrets are masked, as the redactor masks them later (./secrets.ts).
 * @module
 */
import { createRedactor } from '../redact';

/** Environment variables whose values are secrets whatever the config says. */
export const SECRET_ENV = /(_API_KEY|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD|_SESSION_TOKEN)$/;

/** `issue` with every secret it may quote masked. */
export function scrubIssue<T extends { message: string }>(
  issue: T,
  interpolated: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): T {
  const redactor = createRedactor(interpolated);
  for (const [name, value] of Object.entries(env)) if (SECRET_ENV.test(name)) redactor.add(value);
  return { ...issue, message: redactor.string(issue.message) };
}
