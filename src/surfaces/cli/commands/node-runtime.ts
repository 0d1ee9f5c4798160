/**
 * `svc doctor`'s check of the Node.js runtime it runs on. svc supports the LTS lines 20, 22 and 24
 * (README, `engines`); a line past its end of life gets no more security fixes, and Node 20's V8
 * warms a busy service up at a higher CPU cost than 22's and 24's (docs/deploy.md "Which Node for
 * a busy node"). The end-of-life dates are the Node.js release schedule's.
 * @module
 */

/** One line of `svc doctor`'s report. */
export interface RuntimeCheck {
  name: 'node';
  status: 'ok' | 'warn';
  detail: string;
}

/** The supported LTS lines and the day each reaches its end of life (nodejs.org release schedule). */
const END_OF_LIFE: Readonly<Record<number, string>> = {
  20: '2026-04-30',
  22: '2027-04-30',
  24: '2028-04-30',
};

const NEWEST_TESTED = 24;

/** The check for Node `version` (as `process.versions.node`) on `today`. */
export function nodeRuntimeCheck(version: string, today: Date): RuntimeCheck {
  const major = Number.parseInt(version, 10);
  const advice =
    'install Node 24 (svc supports 20, 22 and 24; a busy service warms up with the least CPU on 24)';
  const endOfLife = END_OF_LIFE[major];
  if (endOfLife === undefined) {
    return major > NEWEST_TESTED
      ? { name: 'node', status: 'ok', detail: `Node ${version} (newer than the tested 20, 22 and 24)` }
      : { name: 'node', status: 'warn', detail: `Node ${version} is not a supported line; ${advice}` };
  }
  // The schedule's date is the last supported day: past it once that UTC day is over.
  if (today.getTime() >= Date.parse(`${endOfLife}T00:00:00Z`) + 86_400_000) {
    return {
      name: 'node',
      status: 'warn',
      detail: `Node ${version} is past its end of life (${endOfLife}) and gets no more security fixes; ${advice}`,
    };
  }
  return { name: 'node', status: 'ok', detail: `Node ${version} (supported until ${endOfLife})` };
}
