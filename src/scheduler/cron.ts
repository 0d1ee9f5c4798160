/**
 * Cron expressions (5 fields, or 6 with seconds; `@daily`-style aliases) through `cron-parser`,
 * loaded on first use so `svc --version` does not pay for it.
 * @module
 */
import { SvcError } from '../errors';

export function defaultTimezone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** The next `count` fire times (ms) strictly after `after`. Throws `invalid_input` naming the field. */
export async function nextFireTimes(
  expression: string,
  options: { after: number; timezone: string; count?: number },
): Promise<number[]> {
  const { CronExpressionParser } = await import('cron-parser');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: options.timezone });
  } catch {
    throw new SvcError(
      'invalid_input',
      `timezone: unknown time zone "${options.timezone}" (use an IANA name, e.g. UTC or Europe/Paris)`,
    );
  }
  let parsed: ReturnType<typeof CronExpressionParser.parse>;
  try {
    parsed = CronExpressionParser.parse(expression.trim(), {
      currentDate: new Date(options.after),
      tz: options.timezone,
      strict: false,
    });
  } catch (error) {
    throw new SvcError(
      'invalid_input',
      `cron: invalid expression "${expression}": ${(error as Error).message} (five fields: minute hour day-of-month month day-of-week, e.g. "*/15 * * * *")`,
    );
  }
  const out: number[] = [];
  for (let i = 0; i < (options.count ?? 1); i++) {
    try {
      out.push(parsed.next().getTime());
    } catch {
      break; // no further occurrence
    }
  }
  if (out.length === 0) throw new SvcError('invalid_input', `cron: "${expression}" never fires again`);
  return out;
}
