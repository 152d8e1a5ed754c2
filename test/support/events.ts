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
