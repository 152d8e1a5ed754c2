import { once, type EventEmitter } from 'node:events';

/**
 * Resolves with the first event `name` whose payload satisfies `predicate`, or rejects
 * after `timeoutMs` (a bound, not a sleep: the test goes on as soon as the event fires).
 */
export async function nextEvent<T>(
  emitter: EventEmitter,
  name: string,
  predicate: (payload: T) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<T> {
  const signal = AbortSignal.timeout(timeoutMs);
  for (;;) {
    const [payload] = (await once(emitter, name, { signal })) as [T];
    if (predicate(payload)) return payload;
  }
}
