import { Socket } from 'node:net';
import { vi } from 'vitest';

/** Counts the socket writes made while `fn` runs (every connection of this process). */
export async function writesDuring(fn: () => Promise<unknown>): Promise<number> {
  const write = vi.spyOn(Socket.prototype as unknown as { _write: () => void }, '_write');
  const writev = vi.spyOn(Socket.prototype as unknown as { _writev: () => void }, '_writev');
  try {
    await fn();
    return write.mock.calls.length + writev.mock.calls.length;
  } finally {
    write.mockRestore();
    writev.mockRestore();
  }
}
