/**
 * JSON-lines logger writing to a file in the data dir. Never stdout: the MCP stdio transport and
 * the TUI own it.
 * @module
 */
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redactor } from './redact';

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

function build(sink: Sink, base: Record<string, unknown>, min: LogLevel, redactor?: Redactor): Logger {
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < ORDER[min]) return;
    let record: LogRecord = { level, message, time: new Date().toISOString(), ...base, ...fields };
    if (redactor) record = redactor.value(record);
    try {
      sink(record);
    } catch {
      // A log that cannot be written must never break the operation being logged.
    }
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => build(sink, { ...base, ...fields }, min, redactor),
  };
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
  return build(
    (record) => {
      if (size === undefined) {
        options.prepare?.();
        mkdirSync(dirname(file), { recursive: true });
        size = sizeOf(file);
      }
      const line = `${JSON.stringify(record, errorReplacer)}\n`;
      const bytes = Buffer.byteLength(line);
      // Another process may have written or rotated the file: look at the real size first.
      if (size + bytes > maxBytes) {
        closeFile();
        size = sizeOf(file);
        if (size > 0 && size + bytes > maxBytes) {
          rotate(file, keep);
          size = 0;
        }
      }
      append(line);
      size += bytes;
    },
    {},
    options.level ?? 'info',
    options.redactor,
  );
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
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}
