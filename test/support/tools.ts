import { describe, it } from '@jest/globals';

/**
 * Tests that need a tool this machine may lack (buildah, promtool). The tool's finder
 * (`buildah()`, `promtool()`) returns null when it is absent, and throws when CI=true, so in CI
 * a missing tool fails the file. Outside CI, a null tool makes these tests jest's skipped ones:
 * the summary counts them as skipped instead of showing them green.
 */
export function itWith<T>(
  tool: T | null,
): (name: string, fn: (tool: T) => void | Promise<void>, timeout?: number) => void {
  return (name, fn, timeout) => {
    const register = tool === null ? it.skip : it;
    register(name, () => fn(tool as T), timeout);
  };
}

/** A whole block that needs `tool`: its hooks and tests run only when the tool is there. */
export function describeWith<T>(tool: T | null, name: string, body: (tool: T) => void): void {
  const register = tool === null ? describe.skip : describe;
  // A skipped block's body still runs, to name its tests; its hooks and tests do not.
  register(name, () => body(tool as T));
}
