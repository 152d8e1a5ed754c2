import { expect } from '@jest/globals';
import { UpstreamError } from '../../src/upstream/upstream-error.js';

/** The UpstreamError an upstream call rejects with; a call that succeeds fails the test. */
export async function upstreamFailure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => new Error('the call succeeded'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}
