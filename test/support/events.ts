import type { ChildProcess } from 'node:child_process';
import type { EventEmitter } from 'node:events';

/**
 * Resolves with the first event `name` whose payload satisfies `predicate`, or rejects
 * after `timeoutMs` (a bound, not a sleep: the test goes on as soon as the event fires).
 * One listener stays attached until a match, so no event fired in between is missed.
 */
export function nextEvent<T>(
  emitter: EventEmitter,
  name: string,
  predicate: (payload: T) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const listener = (payload: T) => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      emitter.off(name, listener);
      resolve(payload);
    };
    const timer = setTimeout(() => {
      emitter.off(name, listener);
      reject(new Error(`no matching '${name}' event within ${timeoutMs} ms`));
    }, timeoutMs);
    // A bound left pending by a test that failed first must not hold Jest's worker open at the end.
    timer.unref();
    emitter.on(name, listener);
  });
}

/**
 * Resolves once a server process started by a test writes `ready` on `stream` (redis-server on
 * stdout, postgres on stderr); rejects if it fails to start or exits first, with its last output.
 * The stream keeps flowing afterwards, so a full pipe never stalls the server.
 */
export function untilProcessReady(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  ready: string,
  name: string,
): Promise<void> {
  const output = child[stream];
  let seen = '';
  return new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(ready)) {
        output?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve();
      }
    };
    output?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${seen.slice(-500)}`)));
  });
}

/**
 * The bound on one start of a server the tests run (a gateway in the process or as a child, its
 * Redis connection, its first token attempt, its embedded ledger). It protects the run from a
 * start that never finishes, failing with a message naming what did not happen; it is no measure
 * of speed. A start takes well under a second on an idle machine and up to ~15 s at a load of 8 on
 * 2 cores (issue 47: a fixed 5 s failed there); Jest's testTimeout (jest.config.js) is above it.
 */
export const START_BOUND_MS = 45_000;

/** `started`, or a rejection naming `what` once `bound` (START_BOUND_MS) has passed without it. */
export async function withinStartBound<T>(started: Promise<T>, what: string, bound = START_BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${bound} ms`)), bound);
  });
  try {
    return await Promise.race([started, late]);
  } finally {
    clearTimeout(timer);
  }
}
