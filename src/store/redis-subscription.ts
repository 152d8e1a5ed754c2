import type { RedisClient } from './redis-connection.js';

/**
 * Calls `listener` with every message on `channel`, on the process's shared subscriber
 * connection, subscribing again on every (re)connection: the first attempt may come before
 * Redis is reachable. Resolves once subscribed, or at once while Redis is away (the next
 * `ready` subscribes). Used by the token announcements and the inquiry settlement notices.
 */
export async function subscribe(
  subscriber: RedisClient,
  channel: string,
  listener: (message: string) => void,
): Promise<void> {
  subscriber.on('message', (from: string, message: string) => {
    if (from === channel) listener(message);
  });
  const attempt = () =>
    subscriber.subscribe(channel).then(
      () => undefined,
      () => undefined,
    );
  subscriber.on('ready', () => void attempt());
  if (subscriber.status === 'ready') await attempt();
}
