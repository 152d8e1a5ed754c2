/**
 * Commands issued in one turn of the event loop reach Redis in one write
 * (src/store/write-batching.ts), against a real redis-server: its own count of socket reads
 * (INFO stats `total_reads_processed`) shows how many writes the commands arrived in, and the
 * replies still reach the command that asked, across a restart of the server too.
 */
import { once } from 'node:events';
import { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { batchWritesPerLoopTurn } from '../src/store/write-batching.js';
import { RedisServer } from './support/redis-server.js';

let redis: RedisServer;
let observer: Redis;
const clients: Redis[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  observer = new Redis(redis.url);
});
afterEach(() => {
  clients.splice(0).forEach((c) => c.disconnect());
});
afterAll(async () => {
  observer.disconnect();
  await redis.stop();
});

async function batchedClient(): Promise<Redis> {
  const client = new Redis(redis.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  clients.push(client);
  batchWritesPerLoopTurn(client);
  await client.connect();
  return client;
}

/** Socket reads Redis has made from all its clients so far. */
async function readsProcessed(): Promise<number> {
  const stats = await observer.info('stats');
  return Number(/total_reads_processed:(\d+)/.exec(stats)?.[1]);
}

describe('Redis commands batched per event-loop turn', () => {
  it('sends 100 commands issued in one turn in one write, each answered to its own caller', async () => {
    const client = await batchedClient();
    const before = await readsProcessed();

    const keys = Array.from({ length: 100 }, (_, i) => `batch:${i}`);
    await Promise.all(keys.map((key, i) => client.set(key, `value ${i}`, 'EX', 60)));

    // One read for the 100 commands, one for the observer's INFO.
    expect((await readsProcessed()) - before).toBeLessThanOrEqual(2);
    const values = await Promise.all(keys.map((key) => client.get(key)));
    expect(values).toEqual(keys.map((_, i) => `value ${i}`));
  });

  it('sends commands of later turns in writes of their own, without waiting for more', async () => {
    const client = await batchedClient();
    const before = await readsProcessed();

    for (let i = 0; i < 5; i++) await client.set(`turn:${i}`, String(i));

    // Each awaited command is sent in its own turn: five writes, each answered before the next.
    expect((await readsProcessed()) - before).toBeGreaterThanOrEqual(5);
    expect(await client.mget('turn:0', 'turn:4')).toEqual(['0', '4']);
  });

  it("still finds the seams it wraps in ioredis: every command through the instance's sendCommand, the socket on .stream", async () => {
    // write-batching.ts replaces sendCommand on the instance and corks client.stream. Should a
    // release send commands another way (a private method, or a socket kept elsewhere), batching
    // would silently stop; this fails instead.
    const client = new Redis(redis.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    clients.push(client);
    await client.connect();
    const seen: string[] = [];
    const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
    (client as { sendCommand: unknown }).sendCommand = (command: { name: string }, stream?: unknown) => {
      seen.push(command.name);
      return send(command, stream);
    };

    await client.set('seam', '1', 'EX', 60);
    await client.get('seam');
    await client.eval('return 1', 0);
    await client.multi().incr('seam').exec();
    await client.info('stats');

    expect(seen).toEqual(expect.arrayContaining(['set', 'get', 'eval', 'multi', 'incr', 'exec', 'info']));
    expect(client.stream).toBeInstanceOf(Socket);
    expect(typeof client.stream.cork).toBe('function');
  });

  it('keeps working on the new connection after Redis restarts', async () => {
    const client = await batchedClient();
    await client.set('before-restart', '1');

    await redis.kill();
    await expect(client.set('while-down', '1')).rejects.toThrow();
    await redis.restart();
    if (client.status !== 'ready') await once(client, 'ready');

    await Promise.all([client.set('after-restart', 'a'), client.set('after-restart-2', 'b')]);
    expect(await client.mget('after-restart', 'after-restart-2')).toEqual(['a', 'b']);
  });
});
