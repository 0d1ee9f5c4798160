/**
 * Cron expressions — five fields (minute hour day-of-month month day-of-week) or one of the
 * macros in `CRON_MACROS` — through `cron-parser`, loaded on first use so `svc --version` does not
 * pay for it. A seconds field (six fields, `@secondly`) is refused: a job is at most once a minute.
 * An expression echoed in an error is cut and escaped (src/util/printable.ts).
 * @module
 */
import { SvcError } from '../errors';
import { printable } from '../util/terminal-text';

/** The macros a cron expression may be instead of five fields (each fires at second 0). */
export const CRON_MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly'];

const FIVE_FIELDS = '(five fields: minute hour day-of-month month day-of-week, e.g. "*/15 * * * *")';

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
      `timezone: unknown time zone "${printable(options.timezone, 100)}" (use an IANA name, e.g. UTC or Europe/Paris)`,
    );
  }
  const shown = printable(expression.trim(), 100);
  checkShape(expression.trim(), shown);
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
      `cron: invalid expression "${shown}": ${printable((error as Error).message, 200)} ${FIVE_FIELDS}`,
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
  if (out.length === 0) throw new SvcError('invalid_input', `cron: "${shown}" never fires again`);
  return out;
}

/** Five fields or a macro: a seconds field or any other shape is refused before parsing. */
function checkShape(expression: string, shown: string): void {
  if (expression.startsWith('@')) {
    if (CRON_MACROS.includes(expression)) return;
    throw new SvcError(
      'invalid_input',
      `cron: invalid expression "${shown}": the macros are ${CRON_MACROS.join(', ')} ${FIVE_FIELDS}`,
    );
  }
  const fields = expression.split(/\s+/).length;
  if (fields !== 5) {
    throw new SvcError(
      'invalid_input',
      `cron: invalid expression "${shown}": ${fields} field${fields === 1 ? '' : 's'} where five are needed${fields === 6 ? ' (no seconds field: a job fires at most once a minute)' : ''} ${FIVE_FIELDS}`,
    );
  }
}
