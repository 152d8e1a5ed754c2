import { EventEmitter } from 'node:events';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import { storeCall } from '../store/store-unavailable.error.js';

/**
 * "This inquiry's record has left `pending`", told to the replicas that wait for it, so that a
 * long-poll held on one replica wakes when another settles the record (docs/api.md,
 * "Asynchronous answers"). A notice carries the trackId only: the waiter reads the record
 * itself, with its own caller's visibility rules. Notices are a wake-up, not the truth: one that
 * is lost (Redis down at that moment) costs a waiter its full wait, never a wrong answer.
 */
export abstract class SettledNotices {
  abstract publish(trackId: string): Promise<void>;
  /** Calls `listener` with the trackId of every watched record settled from now on, by any replica. */
  abstract listen(listener: (trackId: string) => void): void;
  /** Starts receiving this record's notices; resolves once they will arrive (true), or false when that failed. */
  abstract watch(trackId: string): Promise<boolean>;
  abstract unwatch(trackId: string): void;
}

/**
 * Redis pub/sub, one channel per trackId, on the process's one subscriber connection (shared
 * with the token announcements): a replica subscribes only while it holds a wait for the record,
 * so a settlement reaches only the replicas that wait for it (one PUBLISH, which Redis drops at
 * once when nobody listens), and held long-polls cost no Redis connection of their own. ioredis
 * subscribes the watched channels again after a reconnection.
 */
export class RedisSettledNotices extends SettledNotices {
  private readonly prefix: string;

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    keys: RedisKeys,
  ) {
    super();
    this.prefix = keys.inquirySettledChannelPrefix();
  }

  publish(trackId: string): Promise<void> {
    return storeCall('inquiry settled notice', async () => {
      await this.client.publish(this.prefix + trackId, trackId);
    });
  }

  listen(listener: (trackId: string) => void): void {
    this.subscriber.on('message', (channel: string, trackId: string) => {
      if (channel.startsWith(this.prefix)) listener(trackId);
    });
  }

  /** Subscribed before the record is read: a settlement after the read cannot be missed. */
  watch(trackId: string): Promise<boolean> {
    // Redis away: the wait still ends with its timeout (or the deadline), reading the record.
    return this.subscriber.subscribe(this.prefix + trackId).then(
      () => true,
      () => false,
    );
  }

  unwatch(trackId: string): void {
    void this.subscriber.unsubscribe(this.prefix + trackId).catch(() => undefined);
  }
}

/** One process (the in-process store): an event emitter; every record is watched. */
export class MemorySettledNotices extends SettledNotices {
  private readonly events = new EventEmitter().setMaxListeners(0);

  publish(trackId: string): Promise<void> {
    this.events.emit('settled', trackId);
    return Promise.resolve();
  }

  listen(listener: (trackId: string) => void): void {
    this.events.on('settled', listener);
  }

  watch(): Promise<boolean> {
    return Promise.resolve(true);
  }

  unwatch(): void {}
}
