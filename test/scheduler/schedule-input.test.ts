/**
 * What a schedule accepts. Pins:
 * - a cron expression has five fields or is one of the documented macros: a seconds field (six
 *   fields, `@secondly`) is refused with a clear error;
 * - a cron or time zone echoed in an error is cut (100 characters and …) and escaped;
 * - a schedule name with a control character (newline, ESC, BEL) or a bidi override is refused,
 *   on create and on update; a lookup key is echoed escaped;
 * - `services.autopilot.tick_seconds` is at least 1.
 */
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp, testClock } from '../helpers/make-test-app';

async function scheduleCall() {
  const app = await makeTestApp({ clock: testClock(Date.UTC(2026, 10, 22, 12, 0, 0)) });
  return (input: Record<string, unknown>) =>
    invokeTool(app, 'schedule', input, { surface: 'agent' }) as Promise<any>;
}

const base = { action: 'create', prompt: 'p', timezone: 'UTC' };

describe('schedule input', () => {
  it('accepts five fields and the documented macros only', async () => {
    const call = await scheduleCall();
    await expect(call({ ...base, name: 'secs', cron: '* * * * * *' })).rejects.toThrow(
      /^cron: invalid expression "\* \* \* \* \* \*": 6 fields where five are needed \(no seconds field: a job fires at most once a minute\)/,
    );
    await expect(call({ ...base, name: 'secondly', cron: '@secondly' })).rejects.toThrow(
      /^cron: invalid expression "@secondly": the macros are @yearly, @annually, @monthly, @weekly, @daily, @hourly/,
    );
    await expect(call({ ...base, name: 'seven', cron: '0 0 * * * * *' })).rejects.toThrow(/7 fields/);
    const daily = await call({ ...base, name: 'daily', cron: '@daily' });
    expect(daily.schedule.next_run_at).toBe(Date.UTC(2026, 10, 23, 0, 0, 0));
    const five = await call({ ...base, name: 'five', cron: ' */15 * * * * ' });
    expect(five.schedule.next_run_at).toBe(Date.UTC(2026, 10, 22, 12, 15, 0));
    await expect(call({ action: 'update', schedule_id: 'five', cron: '*/5 * * * * *' })).rejects.toThrow(
      /6 fields where five are needed/,
    );
  });

  it('cuts and escapes a cron expression or time zone echoed in an error', async () => {
    const call = await scheduleCall();
    const long = `${'1,'.repeat(500)}1 * * * *`;
    const error = await call({ ...base, name: 'long', cron: long }).catch((e: Error) => e);
    expect(error.message).toContain(`"${long.slice(0, 99)}…"`);
    expect(error.message).not.toContain(long.slice(0, 100));
    expect(error.message.length).toBeLessThan(600);
    const zone = await call({ ...base, name: 'tz', cron: '* * * * *', timezone: 'UTC\x1b[2J' }).catch(
      (e: Error) => e,
    );
    expect(zone.message).toBe(
      'timezone: unknown time zone "UTC^[[2J" (use an IANA name, e.g. UTC or Europe/Paris)',
    );
  });

  it('refuses control characters and bidi overrides in a name, on create and update', async () => {
    const call = await scheduleCall();
    const forged = 'ok\n  id  sch_FAKE\x1b[2J\x1b]0;pwned\x07';
    await expect(call({ ...base, name: forged, cron: '* * * * *' })).rejects.toThrow(
      'name: holds the control character ^J at position 3; a schedule name is one line of printable text',
    );
    await expect(call({ ...base, name: 'evil\u202Etxt.exe', cron: '* * * * *' })).rejects.toThrow(
      /^name: holds the control character <U\+202E> at position 5/,
    );
    await expect(call({ ...base, name: 'bell\x07', cron: '* * * * *' })).rejects.toThrow(/\^G/);
    await call({ ...base, name: 'fine-name_1 (nightly)', cron: '* * * * *' });
    await expect(
      call({ action: 'update', schedule_id: 'fine-name_1 (nightly)', name: 'x\x1b[31m' }),
    ).rejects.toThrow(/^name: holds the control character \^\[/);
    expect((await call({ action: 'list' })).schedules.map((s: { name: string }) => s.name)).toEqual([
      'fine-name_1 (nightly)',
    ]);
    await expect(call({ action: 'inspect', schedule_id: 'no\x1b[2J' })).rejects.toThrow(
      'schedule_id: no schedule "no^[[2J"',
    );
  });

  it('keeps the autopilot tick at one second or more', () => {
    const parse = (tick: number) =>
      configSchema().safeParse({ services: { autopilot: { tick_seconds: tick } } }).success;
    expect(parse(0.01)).toBe(false);
    expect(parse(0.5)).toBe(false);
    expect(parse(1)).toBe(true);
    expect(parse(5)).toBe(true);
  });
});
