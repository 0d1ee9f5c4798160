/**
 * Background jobs: `bash` with `run_in_background` starts a command through the command spawner
 * (src/sandbox/spawn.ts: the OS sandbox when active, a scrubbed environment, its own process
 * group) and returns at once; `job_output` reads what it printed since the last read (optionally waiting for
 * it to finish), `job_kill` stops the group. Output is appended to `<dataDir>/jobs/<id>.log`; past
 * `JOB_LOG_SEGMENT_BYTES` that file becomes `<id>.log.1` (replacing the one before) and a new one
 * starts, so a job printing without end keeps at most two segments on disk: its newest output.
 * Jobs belong to this process: `app.close()` stops every one still running.
 * @module
 */
import { closeSync, openSync, readSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import type { CommandSandboxPlan } from '../sandbox/sandbox';
import type { CommandSpawner } from '../sandbox/spawn';
import type { Clock, Ids } from '../util/ids';
import { makeDirs } from '../util/make-dirs';
import { approve, type OpContext } from './context';
import { pruneOldFiles, type SpawnedCommand } from './process';

export const MAX_RUNNING_JOBS = 16;
export const MAX_JOB_WAIT_SECONDS = 120;
/** A job's log file is rotated at this size; the one before is kept (at most twice this on disk). */
export const JOB_LOG_SEGMENT_BYTES = 32 * 1024 * 1024;

export type JobStatus = 'running' | 'exited' | 'killed';

export interface JobInfo {
  job_id: string;
  command: string;
  session_id: string | null;
  pid: number | undefined;
  status: JobStatus;
  exit_code: number | null;
  started_at: number;
  ended_at: number | null;
  output_bytes: number;
  output_file: string;
}

export interface JobOutput extends JobInfo {
  output: string;
  /** Byte offset the returned output starts at. */
  offset: number;
  /** Pass as `offset` to read from where this read stopped. */
  next_offset: number;
  /**
   * Output between `offset` and the returned text that was skipped: to stay under the cap, or
   * because it was rotated out of the log (older than its two newest segments).
   */
  skipped_bytes: number;
}

interface Job {
  id: string;
  command: string;
  sessionId?: string;
  cwd: string;
  proc: SpawnedCommand;
  pid: number | undefined;
  status: JobStatus;
  exitCode: number | null;
  startedAt: number;
  endedAt: number | null;
  logPath: string;
  fd: number | undefined;
  /** Output bytes so far: offsets count from the job's start, whatever was rotated away. */
  bytes: number;
  /** The offset `logPath` starts at; the segment before it (`<logPath>.1`) starts at `prevBase`. */
  base: number;
  prevBase: number | undefined;
  readOffset: number;
  done: Promise<void>;
}

export interface Jobs {
  start(input: {
    command: string;
    cwd: string;
    /** svc's variables for the job (session id), set after the environment is scrubbed. */
    vars?: Record<string, string>;
    sessionId?: string;
    /** The run that started it: its pid and start time go to that run's ledger. */
    runId?: string;
    /** The sandbox wrapper planned by the shell (null: unsandboxed); planned here when omitted. */
    plan?: CommandSandboxPlan | null;
  }): { id: string; pid: number | undefined; logPath: string };
  output(
    jobId: string,
    options: {
      sessionId?: string;
      offset?: number;
      waitSeconds?: number;
      maxBytes: number;
      signal?: AbortSignal;
    },
  ): Promise<JobOutput>;
  kill(jobId: string, options: { sessionId?: string; maxBytes: number; ctx?: OpContext }): Promise<JobOutput>;
  list(sessionId?: string): JobInfo[];
  /** Stop every running job (app.close). */
  stopAll(): Promise<void>;
}

export interface JobsDeps {
  dataDir: string;
  ids: Ids;
  clock: Clock;
  redactor: Redactor;
  spawner: CommandSpawner;
  /** Rotate a job's log at this size (tests); default `JOB_LOG_SEGMENT_BYTES`. */
  logSegmentBytes?: number;
}

export function createJobs(deps: JobsDeps): Jobs {
  const jobs = new Map<string, Job>();
  const { find, read } = jobReaders(jobs, deps.redactor);
  const segment = deps.logSegmentBytes ?? JOB_LOG_SEGMENT_BYTES;

  return {
    start(input) {
      const running = [...jobs.values()].filter((j) => j.status === 'running').length;
      if (running >= MAX_RUNNING_JOBS) {
        throw new SvcError(
          'conflict',
          `${running} background jobs are already running; stop one with job_kill before starting another`,
        );
      }
      const id = deps.ids.next('job');
      const dir = join(deps.dataDir, 'jobs');
      makeDirs(dir);
      pruneOldFiles(dir);
      const logPath = join(dir, `${id}.log`);
      const fd = openSync(logPath, 'w');
      const job = {
        id,
        command: input.command,
        sessionId: input.sessionId,
        cwd: input.cwd,
        status: 'running',
        exitCode: null,
        startedAt: deps.clock.now(),
        endedAt: null,
        logPath,
        fd,
        bytes: 0,
        base: 0,
        prevBase: undefined,
        readOffset: 0,
      } as unknown as Job;
      job.proc = deps.spawner.spawn({
        script: input.command,
        cwd: input.cwd,
        vars: input.vars,
        plan: input.plan,
        runId: input.runId,
        kind: 'job',
        label: deps.redactor.string(
          input.command.length > 500 ? `${input.command.slice(0, 499)}…` : input.command,
        ),
        onOutput: (chunk) => {
          if (job.fd === undefined) return;
          try {
            if (job.bytes > job.base && job.bytes - job.base + chunk.length > segment) rotate(job);
            writeSync(job.fd!, chunk);
            job.bytes += chunk.length;
          } catch {
            // The disk is full or the data dir went away: the job runs on, its log stops here.
            if (job.fd !== undefined) closeSync(job.fd);
            job.fd = undefined;
          }
        },
      });
      job.pid = job.proc.child.pid;
      job.done = job.proc.exited.then((exit) => {
        if (job.status === 'running') job.status = 'exited';
        job.exitCode = exit.code;
        job.endedAt = deps.clock.now();
        const open = job.fd !== undefined;
        if (open) closeSync(job.fd!);
        job.fd = undefined;
        if (open) job.bytes = job.base + safeSize(logPath, job.bytes - job.base);
        job.proc.reap();
      });
      jobs.set(id, job);
      return { id, pid: job.pid, logPath };
    },

    async output(jobId, options) {
      const job = find(jobId, options.sessionId);
      const wait = Math.min(options.waitSeconds ?? 0, MAX_JOB_WAIT_SECONDS);
      if (wait > 0 && job.status === 'running') {
        const controller = new AbortController();
        const signals = [controller.signal, ...(options.signal ? [options.signal] : [])];
        await Promise.race([
          job.done,
          sleep(wait * 1000, undefined, { signal: AbortSignal.any(signals) }).catch(() => {}),
        ]);
        controller.abort();
        if (options.signal?.aborted) throw new SvcError('cancelled', 'job_output was cancelled');
      }
      return read(job, options.offset, options.maxBytes);
    },

    async kill(jobId, options) {
      const job = find(jobId, options.sessionId);
      if (job.status === 'running' && options.ctx) {
        await approve(options.ctx, {
          title: `job_kill ${job.id}: ${job.command.length > 80 ? `${job.command.slice(0, 79)}…` : job.command}`,
          scope: 'jobs',
          details: { job_id: job.id, command: job.command, pid: job.pid ?? null },
        });
      }
      if (job.status === 'running') {
        job.status = 'killed';
        await job.proc.kill();
        await job.done;
      }
      return read(job, undefined, options.maxBytes);
    },

    list(sessionId) {
      return [...jobs.values()].filter((j) => !sessionId || j.sessionId === sessionId).map(info);
    },

    async stopAll() {
      await Promise.all(
        [...jobs.values()]
          .filter((j) => j.status === 'running')
          .map(async (job) => {
            job.status = 'killed';
            await job.proc.kill();
            await job.done;
          }),
      );
    },
  };
}

/** The current log becomes `<logPath>.1` (replacing the older one) and a new one starts. */
function rotate(job: Job): void {
  closeSync(job.fd!);
  job.fd = undefined;
  renameSync(job.logPath, `${job.logPath}.1`);
  job.fd = openSync(job.logPath, 'w');
  job.prevBase = job.base;
  job.base = job.bytes;
}

function safeSize(path: string, fallback: number): number {
  try {
    return statSync(path).size;
  } catch {
    return fallback;
  }
}

function info(job: Job): JobInfo {
  return {
    job_id: job.id,
    command: job.command,
    session_id: job.sessionId ?? null,
    pid: job.pid,
    status: job.status,
    exit_code: job.exitCode,
    started_at: job.startedAt,
    ended_at: job.endedAt,
    output_bytes: job.bytes,
    output_file: job.logPath,
  };
}

/** Finding a job (of the right session) and reading its log. */
function jobReaders(jobs: Map<string, Job>, redactor: Redactor) {
  const find = (jobId: string, sessionId?: string) => {
    const job = jobs.get(jobId);
    if (!job) {
      const known = [...jobs.values()]
        .filter((j) => !sessionId || j.sessionId === sessionId)
        .map((j) => j.id);
      throw new SvcError(
        'not_found',
        `job_id: no background job "${jobId}"${known.length ? `; known jobs: ${known.join(', ')}` : ' (jobs end with the svc process that started them)'}`,
      );
    }
    if (sessionId && job.sessionId && job.sessionId !== sessionId) {
      throw new SvcError('forbidden', `job_id: job "${jobId}" belongs to another session`);
    }
    return job;
  };

  const read = (job: Job, offset: number | undefined, maxBytes: number): JobOutput => {
    const from = Math.max(0, Math.min(offset ?? job.readOffset, job.bytes));
    // What was rotated out of the log is gone: reading starts at the oldest byte still kept.
    const oldest = job.prevBase ?? job.base;
    let start = Math.max(from, oldest);
    let skipped = start - from;
    // Without an explicit offset the newest output matters most: keep the tail under the cap.
    if (offset === undefined && job.bytes - start > maxBytes) {
      skipped = job.bytes - from - maxBytes;
      start = from + skipped;
    }
    const end = Math.min(job.bytes, start + maxBytes);
    let text = '';
    if (end > start) {
      const parts: Buffer[] = [];
      if (job.prevBase !== undefined && start < job.base) {
        parts.push(readRange(`${job.logPath}.1`, start - job.prevBase, Math.min(end, job.base) - start));
      }
      if (end > job.base) {
        const from = Math.max(start, job.base);
        parts.push(readRange(job.logPath, from - job.base, end - from));
      }
      text = Buffer.concat(parts).toString('utf8');
    }
    job.readOffset = Math.max(job.readOffset, end);
    return {
      ...info(job),
      output: redactor.string(text),
      offset: from,
      next_offset: end,
      skipped_bytes: skipped,
    };
  };
  return { find, read };
}

function readRange(path: string, position: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const n = readSync(fd, buffer, 0, length, position);
    return buffer.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}
