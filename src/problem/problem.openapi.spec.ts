import { describe, expect, it } from '@jest/globals';
import { problemResponse } from './problem.openapi.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

describe('problemResponse', () => {
  it('summarises each example by the whole text after its code, colons in it included', () => {
    const examples = problemResponse(['validation_failed', 'payload_too_large']).content?.[PROBLEM_CONTENT_TYPE]
      .examples as Record<string, { summary?: string }>;
    expect(examples.validation_failed.summary).toMatch(
      /^body not JSON or not sent as `Content-Type: application\/json` \(the problem names Content-Type\), .*per bad field\)$/,
    );
    expect(examples.payload_too_large.summary).toBe('body over the limit (16 KiB by default), stated in `detail`');
  });
});
