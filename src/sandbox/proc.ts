/**
 * Process identity on Linux: a pid plus its start time (field 22 of /proc/<pid>/stat, clock ticks
 * since boot) and the boot id name one process for good, so a pid the kernel reused for something
 * else is never killed. Elsewhere (no /proc) nothing can be verified and nothing is killed.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessIdentity {
  pid: number;
  /** Clock ticks since boot; null where /proc is not there. */
  start_time: number | null;
  boot_id: string | null;
}

interface StatFields {
  state: string;
  pgid: number;
  startTime: number;
}

function readStat(pid: number): StatFields | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    // fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19] field 22 (starttime).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const startTime = Number(fields[19]);
    const pgid = Number(fields[2]);
    if (!Number.isFinite(startTime) || !Number.isFinite(pgid)) return null;
    return { state: fields[0], pgid, startTime };
  } catch {
    return null;
  }
}

export function processStartTime(pid: number): number | null {
  const stat = readStat(pid);
  // A zombie is gone for our purposes.
  return stat && stat.state !== 'Z' ? stat.startTime : null;
}

let cachedBootId: string | null | undefined;
export function bootId(): string | null {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      cachedBootId = null;
    }
  }
  return cachedBootId;
}

export function identify(pid: number): ProcessIdentity {
  return { pid, start_time: processStartTime(pid), boot_id: bootId() };
}

/** Is the process that `identity` names still running (same pid, same start, same boot)? */
export function stillRunning(identity: ProcessIdentity): boolean {
  if (identity.start_time === null || identity.boot_id === null) return false;
  if (identity.boot_id !== bootId()) return false;
  return processStartTime(identity.pid) === identity.start_time;
}

/**
 * The live processes of the group `identity` led, when that group is still the one recorded: the
 * leader itself (same start), or members started after it while the leader is gone (a pid reused
 * as a group id since would lead its own, newer group: its leader's start differs).
 */
export function survivors(identity: ProcessIdentity): number[] {
  if (identity.start_time === null || identity.boot_id === null || identity.boot_id !== bootId()) return [];
  const leader = readStat(identity.pid);
  if (leader && leader.state !== 'Z' && leader.startTime !== identity.start_time) return [];
  const members: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (!stat || stat.state === 'Z' || stat.pgid !== identity.pid) continue;
    if (stat.startTime >= identity.start_time) members.push(Number(name));
  }
  return members;
}

/** SIGKILL what is left of the group `identity` led (see `survivors`). Returns the pids killed. */
export function killSurvivors(identity: ProcessIdentity): number[] {
  const pids = survivors(identity);
  if (pids.length === 0) return [];
  try {
    process.kill(-identity.pid, 'SIGKILL');
  } catch {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  return pids;
}
