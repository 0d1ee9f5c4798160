/**
 * JSON-lines logger writing to a file in the data dir. Never stdout: the MCP stdio transport and
 * the TUI own it.
 * @module
 */
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redactor } from './redact';
import { makeDirs } from './util/make-dirs';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LogRecord {
  level: LogLevel;
  message: string;
  time: string;
  [field: string]: unknown;
}

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

type Sink = (record: LogRecord) => void;

/**
 * Records held for the check phase (`deferInfo`, ./log.ts `createFileLogger`): built (level,
 * message, time, fields) when logged, redacted, encoded and written after the code that logged
 * them has run to its next wait for I/O.
 */
interface Later {
  /** `record` logged at `at` (ms): its `time` is `HELD_TIME` unless a field named `time` replaced it. */
  push(record: LogRecord, at: number): void;
  /** The held records written now, in order (before a warning or an error, at exit). */
  flush(): void;
}

/** A held record's `time` until it is written (`Later`). */
const HELD_TIME = '\u0000held';

function build(
  sink: Sink,
  base: Record<string, unknown>,
  min: LogLevel,
  redactor?: Redactor,
  later?: Later,
): Logger {
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < ORDER[min]) return;
    if (later && ORDER[level] <= ORDER.info) {
      // Its time taken now, formatted when written.
      later.push({ level, message, time: HELD_TIME, ...base, ...fields }, Date.now());
      return;
    }
    const record: LogRecord = { level, message, time: new Date().toISOString(), ...base, ...fields };
    if (later) {
      // A warning or an error is written at once, after the records held before it.
      later.flush();
    }
    write(sink, record, redactor);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => build(sink, { ...base, ...fields }, min, redactor, later),
  };
}

function write(sink: Sink, record: LogRecord, redactor?: Redactor): void {
  try {
    sink(redactor ? redactor.value(plainErrors(record)) : record);
  } catch {
    // A log that cannot be written must never break the operation being logged.
  }
}

/** The log file is rotated past this size (svc.log → svc.log.1 → svc.log.2 …). */
export const DEFAULT_LOG_MAX_BYTES = 5 * 1024 * 1024;
/** Rotated files kept next to the live one. */
export const DEFAULT_LOG_KEEP = 2;

export interface FileLoggerOptions {
  level?: LogLevel;
  redactor?: Redactor;
  /** Runs once before the first write (e.g. create the data dir with its permissions). */
  prepare?: () => void;
  /**
   * Debug and info records are written one check phase after the one that follows their turn
   * (`setImmediate` twice: after what that check phase runs, p-promptheld), all of a turn in one
   * write, not in the logging code's stretch (a request's `run started` before its model request,
   * `run finished` before its `[DONE]`): same lines, same
   * order, each record's `time` the moment it was logged. A warning or an error writes the held
   * records first, then itself, at once; the process's exit writes what is still held.
   */
  deferInfo?: boolean;
  maxBytes?: number;
  keep?: number;
}

/**
 * Appends JSON lines to `file`, created on the first record. Past `maxBytes` the file is renamed
 * to `file.1` (older ones shift up to `file.<keep>`, the oldest dropped), so the logs of every
 * process that shares the data dir stay bounded.
 */
export function createFileLogger(file: string, options: FileLoggerOptions = {}): Logger {
  const maxBytes = options.maxBytes ?? DEFAULT_LOG_MAX_BYTES;
  const keep = options.keep ?? DEFAULT_LOG_KEEP;
  let size: number | undefined;
  // The file stays open while records come (one write each, not an open, a write and a close:
  // ≈ 0.1 ms a record in a busy service) and is closed after a second without one, or before a
  // rotation. Another process's rotation is seen at the size check, which reopens by name.
  let fd: number | undefined;
  let idle: ReturnType<typeof setTimeout> | undefined;
  const closeFile = () => {
    if (idle) clearTimeout(idle);
    idle = undefined;
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    fd = undefined;
  };
  const append = (line: string) => {
    fd ??= openSync(file, 'a');
    try {
      writeSync(fd, line);
    } catch (error) {
      closeFile(); // the next record opens the file again
      throw error;
    }
    if (idle) idle.refresh();
    else {
      idle = setTimeout(closeFile, 1000);
      idle.unref?.();
    }
  };
  const opened = () => {
    if (size === undefined) {
      options.prepare?.();
      makeDirs(dirname(file));
      size = sizeOf(file);
    }
    return size;
  };
  /** Lines of `bytes` bytes appended, the file rotated first when they would take it past `maxBytes`. */
  const appendLines = (text: string, bytes: number) => {
    // Another process may have written or rotated the file: look at the real size first.
    if (opened() + bytes > maxBytes) {
      closeFile();
      size = sizeOf(file);
      if (size > 0 && size + bytes > maxBytes) {
        rotate(file, keep);
        size = 0;
      }
    }
    append(text);
    size = (size ?? 0) + bytes;
  };
  const sink: Sink = (record) => {
    const line = lineOf(record);
    appendLines(line, Buffer.byteLength(line));
  };
  const redactor = options.redactor;
  return build(
    sink,
    {},
    options.level ?? 'info',
    redactor,
    options.deferInfo ? heldRecords(sink, appendLines, maxBytes, redactor) : undefined,
  );
}

/** A record's line in the log file. */
const lineOf = (record: LogRecord) => `${JSON.stringify(record, errorReplacer)}\n`;

/**
 * `deferInfo`'s queue: the records of a turn written at the check phase after its next, in one write while they
 * fit in the live file (else one by one, each rotation where it was), or at exit.
 */
function heldRecords(
  sink: Sink,
  appendLines: (text: string, bytes: number) => void,
  maxBytes: number,
  redactor?: Redactor,
): Later {
  let held: LogRecord[] = [];
  let times: number[] = [];
  let scheduled = false;
  const flush = () => {
    if (held.length === 0) return;
    const records = held;
    const at = times;
    held = [];
    times = [];
    heldAtExit.delete(flush);
    let text = '';
    for (let i = 0; i < records.length; i++) {
      const record = records[i];
      if (record.time === HELD_TIME) record.time = new Date(at[i]).toISOString();
      try {
        text += lineOf(redactor ? redactor.value(plainErrors(record)) : record);
      } catch {
        // A record that cannot be encoded is left out, as `write` leaves it out.
      }
    }
    const bytes = Buffer.byteLength(text);
    try {
      if (bytes <= maxBytes / 2) {
        appendLines(text, bytes);
        return;
      }
    } catch {
      return; // as `write`: a log that cannot be written breaks nothing
    }
    for (const record of records) write(sink, record, redactor);
  };
  const onCheck = () => {
    scheduled = false;
    flush();
  };
  // The check phase after the one that follows the records' turn (p-promptheld): a compat
  // request's `run started` after its head and role chunk and its start's yielded COMMIT.
  const onTurn = () => setImmediate(onCheck);
  return {
    push(record, time) {
      if (held.length === 0) atExit(flush);
      held.push(record);
      times.push(time);
      if (scheduled) return;
      scheduled = true;
      setImmediate(onTurn);
    },
    flush,
  };
}

/** The held records' writes (`deferInfo`) the process's exit makes: one listener for every logger. */
const heldAtExit = new Set<() => void>();
let exitListening = false;
function atExit(flush: () => void): void {
  heldAtExit.add(flush);
  if (exitListening) return;
  exitListening = true;
  process.on('exit', () => {
    for (const held of [...heldAtExit]) held();
  });
}

/** The rotated files of a log (`svc.log.1` …) that exist, newest first. */
export function rotatedLogFiles(file: string, keep = DEFAULT_LOG_KEEP): string[] {
  const found: string[] = [];
  for (let i = 1; i <= keep; i++) if (existsSync(`${file}.${i}`)) found.push(`${file}.${i}`);
  return found;
}

function rotate(file: string, keep: number): void {
  try {
    if (keep <= 0) {
      rmSync(file, { force: true });
      return;
    }
    rmSync(`${file}.${keep}`, { force: true });
    for (let i = keep - 1; i >= 1; i--) {
      if (existsSync(`${file}.${i}`)) renameSync(`${file}.${i}`, `${file}.${i + 1}`);
    }
    renameSync(file, `${file}.1`);
  } catch {
    // Rotation is best effort (another process may be rotating the same file right now).
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export function createMemoryLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  return Object.assign(
    build((r) => records.push(r), {}, 'debug'),
    { records },
  );
}

export const nullLogger: Logger = build(() => {}, {}, 'error');

function errorReplacer(_key: string, value: unknown) {
  return value instanceof Error ? plainError(value) : value;
}

/** An Error as the fields a log line keeps of it: name, message, stack, its code and its cause. */
function plainError(error: Error, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { name: error.name, message: error.message, stack: error.stack };
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (code !== undefined) out.code = code;
  if (cause !== undefined)
    out.cause = cause instanceof Error ? (depth < 4 ? plainError(cause, depth + 1) : cause.message) : cause;
  return out;
}

/**
 * The record with each Error field as its plain fields, before the redactor copies it: the
 * redactor copies an object's own enumerable properties, and an Error has none (its message and
 * stack are not enumerable), so a logged `{ error }` was written as `"error":{}`.
 */
function plainErrors(record: LogRecord): LogRecord {
  let out: LogRecord | undefined;
  for (const key in record) {
    const value = record[key];
    if (value instanceof Error) {
      out ??= { ...record };
      out[key] = plainError(value);
    }
  }
  return out ?? record;
}
