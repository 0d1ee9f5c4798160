/**
 * JSON-lines logger writing to a file in the data dir. Never stdout: the MCP stdio transport and
 * the TUI own it.
 * @module
 */
import { appendFileSync, mkdirSync } from 'node:fs';
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

export function createFileLogger(
  file: string,
  options: { level?: LogLevel; redactor?: Redactor; prepare?: () => void } = {},
): Logger {
  let ready = false;
  return build(
    (record) => {
      if (!ready) {
        options.prepare?.();
        mkdirSync(dirname(file), { recursive: true });
        ready = true;
      }
      appendFileSync(file, `${JSON.stringify(record, errorReplacer)}\n`);
    },
    {},
    options.level ?? 'info',
    options.redactor,
  );
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
