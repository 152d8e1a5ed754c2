import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import type { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { QueuedEntry } from './ledger-entry.js';
import { LedgerQueue, type InquiryFactsInput, type QueueMessage } from './ledger-queue.js';

/** The stream's consumer group: every replica's drainer is one consumer in it. */
const GROUP = 'ledger-drainers';
/** A consumer silent this long is taken for dead: its unacknowledged entries are claimed. */
export const CLAIM_IDLE_MS = 60_000;

/** With the record's create: the duty (KEYS due, duties; ARGV trackId, dueAt, sealed entry). */
const OWE = `
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1`;

/** With the record's settle: the entry on the stream, the duty lifted (KEYS due, duties, entries). */
const SETTLE = `
redis.call('XADD', KEYS[3], '*', 't', ARGV[1], 'e', ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`;

/** With the record's discard: the duty lifted (KEYS due, duties; ARGV trackId). */
const DISCARD = `
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('HDEL', KEYS[2], ARGV[1])`;

/** Duties past due move to the stream as their `unknown` entries; one script, so one replica each. */
const CLAIM_OVERDUE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local duty = redis.call('HGET', KEYS[2], id)
  if duty then redis.call('XADD', KEYS[3], '*', 't', id, 'e', duty) end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return #ids`;

/** Acknowledged entries leave the stream too: its length is the backlog (KEYS entries; ARGV group, ids…). */
const ACK = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface LedgerScripts {
  vgwLedgerOwe(due: string, duties: string, trackId: string, dueAt: number, sealed: string): Promise<number>;
  vgwLedgerSettle(due: string, duties: string, entries: string, trackId: string, sealed: string): Promise<number>;
  vgwLedgerDiscard(due: string, duties: string, trackId: string): Promise<number>;
  vgwLedgerClaimOverdue(due: string, duties: string, entries: string, now: number, limit: number): Promise<number>;
  vgwLedgerAck(entries: string, group: string, ...ids: string[]): Promise<number>;
}

type StreamEntries = Array<[id: string, fields: string[]]>;

/**
 * The queue in Redis: duties in a sorted set (by due time) and a hash, entries on a stream
 * read by a consumer group. Every value is sealed (encryption at rest) and bound to its
 * trackId. All keys share one hash tag (Redis Cluster: one slot), so each script is atomic.
 */
export class RedisLedgerQueue extends LedgerQueue {
  private readonly logger = new Logger('LedgerQueue');
  private readonly scripts: LedgerScripts;
  private readonly due: string;
  private readonly duties: string;
  private readonly stream: string;
  /** This process's consumer name: unique per start, so a restarted replica's leftovers are claimed. */
  readonly consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  private groupReady = false;

  constructor(
    private readonly client: RedisClient,
    keys: RedisKeys,
    private readonly cipher: StoreCipher,
    prices: InquiryPrices,
    /** How long a consumer's unacknowledged entries wait before another takes them. */
    private readonly claimIdleMs = CLAIM_IDLE_MS,
  ) {
    super(prices);
    this.due = keys.ledger('due');
    this.duties = keys.ledger('duties');
    this.stream = keys.ledger('entries');
    client.defineCommand('vgwLedgerOwe', { numberOfKeys: 2, lua: OWE });
    client.defineCommand('vgwLedgerSettle', { numberOfKeys: 3, lua: SETTLE });
    client.defineCommand('vgwLedgerDiscard', { numberOfKeys: 2, lua: DISCARD });
    client.defineCommand('vgwLedgerClaimOverdue', { numberOfKeys: 3, lua: CLAIM_OVERDUE });
    client.defineCommand('vgwLedgerAck', { numberOfKeys: 1, lua: ACK });
    this.scripts = client as unknown as LedgerScripts;
  }

  owe(record: InquiryFactsInput): Promise<void> {
    return storeCall('ledger duty', async () => {
      const { entry, dueAt } = this.dutyOf(record);
      await this.scripts.vgwLedgerOwe(this.due, this.duties, record.trackId, dueAt, this.seal(entry));
    });
  }

  settled(record: InquiryFactsInput): Promise<void> {
    return storeCall('ledger entry', async () => {
      await this.scripts.vgwLedgerSettle(
        this.due,
        this.duties,
        this.stream,
        record.trackId,
        this.seal(this.entryOf(record)),
      );
    });
  }

  discard(trackId: string): Promise<void> {
    return storeCall('ledger duty discard', async () => {
      await this.scripts.vgwLedgerDiscard(this.due, this.duties, trackId);
    });
  }

  async claimOverdue(now: number, limit: number): Promise<number> {
    return this.scripts.vgwLedgerClaimOverdue(this.due, this.duties, this.stream, now, limit);
  }

  async read(count: number): Promise<QueueMessage[]> {
    try {
      return await this.readOnce(count);
    } catch (error) {
      // NOGROUP: Redis lost the stream and its group (a restart without persistence).
      if (error instanceof Error && error.message.includes('NOGROUP')) this.groupReady = false;
      throw error;
    }
  }

  private async readOnce(count: number): Promise<QueueMessage[]> {
    await this.ensureGroup();
    // 1. Ours, read before and not yet acknowledged (the last write to PostgreSQL failed).
    let entries = await this.readGroup(count, '0');
    // 2. A dead consumer's (a replica killed after reading), idle long enough.
    if (entries.length === 0) {
      const claimed = (await this.client.xautoclaim(
        this.stream,
        GROUP,
        this.consumer,
        this.claimIdleMs,
        '0-0',
        'COUNT',
        count,
      )) as [string, StreamEntries, string[]];
      entries = claimed[1].filter((entry) => entry !== null && Array.isArray(entry[1]));
    }
    // 3. New ones.
    if (entries.length === 0) entries = await this.readGroup(count, '>');
    const { messages, unreadable } = this.open(entries);
    if (unreadable.length > 0) await this.client.xack(this.stream, GROUP, ...unreadable);
    return messages;
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.scripts.vgwLedgerAck(this.stream, GROUP, ...ids);
  }

  async backlog(now: number): Promise<{ depth: number; oldestAgeSeconds: number }> {
    const [depth, first] = await Promise.all([
      this.client.xlen(this.stream),
      this.client.xrange(this.stream, '-', '+', 'COUNT', 1),
    ]);
    const oldestMs = first.length > 0 ? Number(first[0][0].split('-')[0]) : now;
    return { depth, oldestAgeSeconds: Math.max(0, (now - oldestMs) / 1000) };
  }

  private async readGroup(count: number, from: '0' | '>'): Promise<StreamEntries> {
    const reply = (await this.client.xreadgroup(
      'GROUP',
      GROUP,
      this.consumer,
      'COUNT',
      count,
      'STREAMS',
      this.stream,
      from,
    )) as Array<[string, StreamEntries]> | null;
    return reply?.[0]?.[1] ?? [];
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    try {
      // From the stream's start: entries added before any group existed are drained too.
      await this.client.xgroup('CREATE', this.stream, GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes('BUSYGROUP')) throw error;
    }
    this.groupReady = true;
  }

  /**
   * Entries that cannot be opened (a key removed from the ring too early, or altered) are
   * logged and left on the stream (acknowledged, so they are not read again, but not deleted):
   * nothing is dropped silently, and the backlog metric keeps showing them.
   */
  private open(entries: StreamEntries): { messages: QueueMessage[]; unreadable: string[] } {
    const messages: QueueMessage[] = [];
    const unreadable: string[] = [];
    for (const [id, fields] of entries) {
      const trackId = fields[fields.indexOf('t') + 1];
      const sealed = fields[fields.indexOf('e') + 1];
      try {
        messages.push({ id, entry: JSON.parse(this.cipher.open(sealed, context(trackId))) as QueuedEntry });
      } catch {
        this.logger.error(`ledger entry ${id} on the stream cannot be opened; left on the stream`);
        unreadable.push(id);
      }
    }
    return { messages, unreadable };
  }

  private seal(entry: QueuedEntry): string {
    return this.cipher.seal(JSON.stringify(entry), context(entry.trackId));
  }
}

/** Sealed values are bound to their trackId: a value moved between duty and stream still opens. */
function context(trackId: string): string {
  return `ledger:${trackId}`;
}
