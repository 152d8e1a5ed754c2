import { EventEmitter } from 'node:events';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import { storeCall } from '../store/store-unavailable.error.js';
import { subscribe } from '../store/redis-subscription.js';

/**
 * "This inquiry's record has left `pending`", told to every replica, so that a long-poll held
 * on one replica wakes when another settles the record (docs/api.md, "Asynchronous answers").
 * A notice carries the trackId only: the waiter reads the record itself, with its own caller's
 * visibility rules. Notices are a wake-up, not the truth: one that is lost (Redis down at that
 * moment) costs a waiter its full wait, never a wrong answer.
 */
export abstract class SettledNotices {
  abstract publish(trackId: string): Promise<void>;
  /** Calls `listener` with the trackId of every record settled from now on, by any replica. */
  abstract listen(listener: (trackId: string) => void): Promise<void>;
}

/**
 * Redis pub/sub on the process's one subscriber connection (shared with the token
 * announcements): held long-polls cost no Redis connection of their own.
 */
export class RedisSettledNotices extends SettledNotices {
  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    super();
  }

  publish(trackId: string): Promise<void> {
    return storeCall('inquiry settled notice', async () => {
      await this.client.publish(this.keys.inquirySettledChannel(), trackId);
    });
  }

  listen(listener: (trackId: string) => void): Promise<void> {
    return subscribe(this.subscriber, this.keys.inquirySettledChannel(), listener);
  }
}

/** One process (the in-process store): an event emitter. */
export class MemorySettledNotices extends SettledNotices {
  private readonly events = new EventEmitter().setMaxListeners(0);

  publish(trackId: string): Promise<void> {
    this.events.emit('settled', trackId);
    return Promise.resolve();
  }

  listen(listener: (trackId: string) => void): Promise<void> {
    this.events.on('settled', listener);
    return Promise.resolve();
  }
}
