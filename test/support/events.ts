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
