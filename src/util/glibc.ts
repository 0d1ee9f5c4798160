/**
 * Whether this process runs on glibc (./malloc.ts tunes its malloc, ./malloc-trim.ts calls its
 * `malloc_trim`).
 * @module
 */
import { readFileSync } from 'node:fs';

/** Whether glibc's libc is mapped into this process (a musl or static build maps none). */
export function glibcLoaded(): boolean {
  try {
    return /\/libc(\.so\.6|-2\.\d+\.so)$/m.test(readFileSync('/proc/self/maps', 'utf8'));
  } catch {
    return false;
  }
}
