/**
 * The `SvcError` a promise rejects with: `expect((await svcFailure(call())).code).toBe('conflict')`.
 * Any other error is thrown on; a promise that resolves fails the test.
 * @module
 */
import { SvcError } from '../../src/errors';

export async function svcFailure(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    if (SvcError.is(error)) return error;
    throw error;
  }
  throw new Error('expected a failure');
}
