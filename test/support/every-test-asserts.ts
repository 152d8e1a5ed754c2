import { beforeEach, expect } from '@jest/globals';

// Loaded before every spec file (jest.config.js, setupFilesAfterEnv): a test that ends
// without a single assertion fails, so no test can pass by returning early.
beforeEach(() => {
  expect.hasAssertions();
});
