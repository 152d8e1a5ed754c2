import { afterAll, beforeAll } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { RedisKeys } from '../../src/store/redis-keys.js';
import { RedisServer } from './redis-server.js';

/**
 * One redis-server for a whole spec file and the clients its tests open on it. Apart from
 * redis-server.ts because it registers jest hooks, and the benchmarks import that file outside jest.
 */
export class FileRedis {
  private started: RedisServer | undefined;
  private readonly clients: Redis[] = [];
  private prefixes = 0;

  get server(): RedisServer {
    if (!this.started) throw new Error('the redis-server starts in beforeAll: use it from a hook or a test');
    return this.started;
  }

  /** A client on the server, disconnected when the file ends. */
  client(options: RedisOptions = {}): Redis {
    const client = new Redis(this.server.url, options);
    this.clients.push(client);
    return client;
  }

  /** Keys under a prefix no other call in the file gets (`name-1`, `name-2`, …): stores made apart stay apart. */
  keys(name: string): RedisKeys {
    return new RedisKeys(`${name}-${++this.prefixes}`);
  }

  async start(): Promise<void> {
    this.started = await RedisServer.start();
  }

  async stop(): Promise<void> {
    this.clients.forEach((client) => client.disconnect());
    await this.started?.stop();
  }
}

/** Call at a spec file's top level: the server starts before its tests and stops after them. */
export function redisPerFile(): FileRedis {
  const redis = new FileRedis();
  beforeAll(() => redis.start());
  afterAll(() => redis.stop());
  return redis;
}
