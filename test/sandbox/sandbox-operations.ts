/**
 * Operations added by configuration in the sandbox (docs/api.md, "Operations the operator adds"):
 * INQUIRY_OPERATIONS or INQUIRY_OPERATIONS_FILE reaches the gateway with the rest of the
 * environment, and the simulator answers any such path (upstream-simulator/added-operations.ts).
 * What the sandbox adds is its every-scope key's `kyc:<name>` for each, read from the same JSON.
 * A list the gateway refuses gives no names here: its start then names the problem itself.
 */
import { readFileSync } from 'node:fs';

/** The names of the operations the environment adds; none when unset or not a readable list. */
export function addedOperationNames(env: NodeJS.ProcessEnv): string[] {
  let text = env.INQUIRY_OPERATIONS;
  try {
    if (!text && env.INQUIRY_OPERATIONS_FILE) text = readFileSync(env.INQUIRY_OPERATIONS_FILE, 'utf8');
    const entries: unknown = text ? JSON.parse(text) : [];
    if (!Array.isArray(entries)) return [];
    return entries.flatMap((entry: unknown) => {
      const name = (entry as { name?: unknown } | null)?.name;
      return typeof name === 'string' ? [name] : [];
    });
  } catch {
    return [];
  }
}
