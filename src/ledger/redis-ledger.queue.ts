import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import type { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import { BUDGET_LUA, reserveArgs, reserveKeys, reserveResult } from '../budget/redis-budget.store.js';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { QueuedEntry } from './ledger-entry.js';
import { LedgerQueue, type BudgetAction, type InquiryFactsInput, type QueueMessage } from './ledger-queue.js';

/** The stream's consumer group: every replica's drainer is one consumer in it. */
const GROUP = 'ledger-drainers';
/** A consumer silent this long is taken for dead: its unacknowledged entries are claimed. */
export const CLAIM_IDLE_MS = 60_000;

/**
 * With the record's create: the duty, and with a budget the reservation first
 * (budget/redis-budget.store.ts), the duty written only when every budget admits the inquiry.
 * KEYS due, duties, then the reservation's four when a budget applies; ARGV trackId, dueAt,
 * sealed entry, then the reservation's arguments. Returns the reservation's answer ({1} without).
 */
const OWE = `${BUDGET_LUA}
local admitted = {1}
if KEYS[3] then admitted = reserve(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1], 4, 9) end
if admitted[1] == 1 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
return admitted`;

/**
 * After the upstream answer: the entry on the stream, the duty lifted, and with a budget the
 * reservation committed or released. KEYS due, duties, entries, then reservations and deadlines
 * when a budget applies; ARGV trackId, sealed entry, then now and commit | release.
 */
const SETTLE = `${BUDGET_LUA}
redis.call('XADD', KEYS[3], '*', 't', ARGV[1], 'e', ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if KEYS[4] then
  sweep(KEYS[4], KEYS[5], tonumber(ARGV[3]))
  finish(KEYS[4], KEYS[5], ARGV[1], ARGV[4])
end
return 1`;

/** Refused before sending: the duty lifted, and the reservation released (KEYS due, duties, reservations, deadlines; ARGV trackId, now). */
const DISCARD = `${BUDGET_LUA}
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if KEYS[3] then
  sweep(KEYS[3], KEYS[4], tonumber(ARGV[2]))
  finish(KEYS[3], KEYS[4], ARGV[1], 'release')
end
return 1`;

/** Duties past due move to the stream as their `unknown` entries; one script, so one replica each. */
const CLAIM_OVERDUE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local duty = redis.call('HGET', KEYS[2], id)
  if duty and string.sub(duty, 1, 2) == 'r|' then
    redis.call('XADD', KEYS[3], '*', 't', id, 'o', string.sub(duty, 3))
  elseif duty then
    redis.call('XADD', KEYS[3], '*', 't', id, 'e', duty)
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return #ids`;

/**
 * Standalone Redis (not Cluster), where one script may touch keys of any slot: the record's
 * create and the duty in one command. The duty is the sealed record itself (`r|` marks it; the
 * drainer derives the `unknown` entry from it), so nothing is serialised or sent twice. KEYS
 * record, due, duties, then the reservation's four when a budget applies; ARGV trackId, dueAt,
 * sealed record, TTL, then the reservation's arguments. Returns {-1} when the record exists
 * (a trackId collision), else the reservation's answer; refused, nothing is written at all.
 */
const CREATE_WITH_RECORD = `${BUDGET_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 then return {-1} end
local admitted = {1}
if KEYS[4] then admitted = reserve(KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[1], 5, 10) end
if admitted[1] == 1 then
  redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], 'r|' .. ARGV[3])
end
return admitted`;

/**
 * Standalone Redis: the record's settle and the entry in one command; the entry is the sealed
 * settled record (field \`r\`). KEYS record, due, duties, entries, then reservations and
 * deadlines when a budget applies; ARGV trackId, sealed record, TTL to write a record that is
 * gone with (0: not), then now and commit | release.
 */
const SETTLE_WITH_RECORD = `${BUDGET_LUA}
if not redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL', 'XX') and tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3], 'NX')
end
redis.call('XADD', KEYS[4], '*', 't', ARGV[1], 'r', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if KEYS[5] then
  sweep(KEYS[5], KEYS[6], tonumber(ARGV[4]))
  finish(KEYS[5], KEYS[6], ARGV[1], ARGV[5])
end
return 1`;

/**
 * Forgets the group's dead consumers: every start of a replica adds one (its name is unique per
 * process) and Redis never removes them. Only one with nothing pending and silent for ten claim
 * periods, checked and removed in one script so that no entry it might take meanwhile is lost
 * with it (DELCONSUMER drops a consumer's pending entries), and never the caller itself. On
 * Redis 7.0 a read that finds nothing does not count as heard from (7.2 counts it), so a live
 * but idle replica may be forgotten too: harmless, it holds nothing and its next read that
 * finds an entry makes it again. KEYS entries; ARGV group, idle ms, the caller's name. Returns
 * how many were removed.
 */
const FORGET_DEAD_CONSUMERS = `
local removed = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if fields['pending'] == 0 and fields['idle'] > tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    removed = removed + 1
  end
end
return removed`;

/** Acknowledged entries leave the stream too: its length is the backlog (KEYS entries; ARGV group, ids…). */
const ACK = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface LedgerScripts {
  vgwLedgerOwe(numberOfKeys: number, ...args: Array<string | number>): Promise<Array<string | number>>;
  vgwLedgerSettle(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerDiscard(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerCreateWithRecord(numberOfKeys: number, ...args: Array<string | number>): Promise<Array<string | number>>;
  vgwLedgerSettleWithRecord(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerClaimOverdue(due: string, duties: string, entries: string, now: number, limit: number): Promise<number>;
  vgwLedgerAck(entries: string, group: string, ...ids: string[]): Promise<number>;
  vgwLedgerForgetDeadConsumers(entries: string, group: string, idleMs: number, caller: string): Promise<number>;
}

type StreamEntries = Array<[id: string, fields: string[]]>;

/**
 * The queue in Redis: duties in a sorted set (by due time) and a hash, entries on a stream
 * read by a consumer group. Every value is sealed (encryption at rest) and bound to its
 * trackId. All keys share the accounting hash tag with the budgets' (Redis Cluster: one slot),
 * so each script, reservation and settlement included, is atomic.
 */
export class RedisLedgerQueue extends LedgerQueue {
  private readonly logger = new Logger('LedgerQueue');
  private readonly scripts: LedgerScripts;
  private readonly due: string;
  private readonly duties: string;
  private readonly stream: string;
  private readonly reservations: string;
  private readonly reservationDeadlines: string;
  /** This process's consumer name: unique per start, so a restarted replica's leftovers are claimed. */
  readonly consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  private groupReady = false;
  /**
   * Standalone Redis: the record store writes the duty and the entry in the record's own
   * command (createWithRecord, settleWithRecord): one command per write, the record sent once.
   * In a Cluster the record and the queue are in different slots: one more command per write.
   */
  readonly fusesRecords: boolean;
  /** Entries this consumer read and has not acknowledged (a failed write): read again first. */
  private unacknowledged = false;
  /** A dead consumer's entries are looked for this often, not at every poll. */
  private nextAutoclaim = 0;
  /** Dead consumers with nothing pending are forgotten this often (FORGET_DEAD_CONSUMERS). */
  private nextForget = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
    prices: InquiryPrices,
    /** How long a consumer's unacknowledged entries wait before another takes them. */
    private readonly claimIdleMs = CLAIM_IDLE_MS,
  ) {
    super(prices, cipher.enabled);
    this.due = keys.ledger('due');
    this.reservations = keys.budgetReservations();
    this.reservationDeadlines = keys.budgetDeadlines();
    this.duties = keys.ledger('duties');
    this.stream = keys.ledger('entries');
    // Each with or without a reservation's keys: the key count is the call's first argument.
    client.defineCommand('vgwLedgerOwe', { lua: OWE });
    client.defineCommand('vgwLedgerSettle', { lua: SETTLE });
    client.defineCommand('vgwLedgerDiscard', { lua: DISCARD });
    client.defineCommand('vgwLedgerCreateWithRecord', { lua: CREATE_WITH_RECORD });
    client.defineCommand('vgwLedgerSettleWithRecord', { lua: SETTLE_WITH_RECORD });
    this.fusesRecords = !client.isCluster;
    client.defineCommand('vgwLedgerClaimOverdue', { numberOfKeys: 3, lua: CLAIM_OVERDUE });
    client.defineCommand('vgwLedgerAck', { numberOfKeys: 1, lua: ACK });
    client.defineCommand('vgwLedgerForgetDeadConsumers', { numberOfKeys: 1, lua: FORGET_DEAD_CONSUMERS });
    this.scripts = client as unknown as LedgerScripts;
  }

  owe(record: InquiryFactsInput, reservation?: ReserveRequest): Promise<ReserveResult | undefined> {
    return storeCall('ledger duty', async () => {
      const { entry, dueAt } = this.dutyOf(record);
      const keys = [this.due, this.duties, ...(reservation ? reserveKeys(this.keys, reservation) : [])];
      const reply = await this.scripts.vgwLedgerOwe(
        keys.length,
        ...keys,
        record.trackId,
        dueAt,
        this.seal(entry),
        ...(reservation ? reserveArgs(reservation) : []),
      );
      return reservation ? reserveResult(reply) : undefined;
    });
  }

  settled(record: InquiryFactsInput, budget?: BudgetAction): Promise<void> {
    return storeCall('ledger entry', async () => {
      const reservation = this.finishing(budget);
      const keys = [this.due, this.duties, this.stream, ...reservation.keys];
      await this.scripts.vgwLedgerSettle(
        keys.length,
        ...keys,
        record.trackId,
        this.seal(this.entryOf(record)),
        ...reservation.args,
      );
    });
  }

  discard(trackId: string, releaseReservation: boolean): Promise<void> {
    return storeCall('ledger duty discard', async () => {
      if (releaseReservation) {
        await this.scripts.vgwLedgerDiscard(
          4,
          this.due,
          this.duties,
          this.reservations,
          this.reservationDeadlines,
          trackId,
          Date.now(),
        );
      } else {
        await this.scripts.vgwLedgerDiscard(2, this.due, this.duties, trackId);
      }
    });
  }

  /**
   * The record's create, its duty and (with a budget) its reservation: one script. The sealed
   * record is bound to `recordKey` (StoreCipher AAD) and is the duty. Throws on a trackId
   * collision; refused by a budget, writes nothing.
   */
  createWithRecord(
    recordKey: string,
    sealedRecord: string,
    ttlSeconds: number,
    record: InquiryFactsInput,
    reservation?: ReserveRequest,
  ): Promise<ReserveResult | undefined> {
    return storeCall('inquiry create', async () => {
      const keys = [recordKey, this.due, this.duties, ...(reservation ? reserveKeys(this.keys, reservation) : [])];
      const reply = await this.scripts.vgwLedgerCreateWithRecord(
        keys.length,
        ...keys,
        record.trackId,
        this.dueAtOf(record),
        sealedRecord,
        ttlSeconds,
        ...(reservation ? reserveArgs(reservation) : []),
      );
      if (Number(reply[0]) === -1) throw new Error('trackId collision');
      return reservation ? reserveResult(reply) : undefined;
    });
  }

  /** The record's settle, its entry, the duty lifted, the reservation committed or released: one script. */
  settleWithRecord(
    recordKey: string,
    sealedRecord: string,
    ttlSeconds: number | undefined,
    record: InquiryFactsInput,
    budget?: BudgetAction,
  ): Promise<void> {
    return storeCall('inquiry settle', async () => {
      const reservation = this.finishing(budget);
      const keys = [recordKey, this.due, this.duties, this.stream, ...reservation.keys];
      await this.scripts.vgwLedgerSettleWithRecord(
        keys.length,
        ...keys,
        record.trackId,
        sealedRecord,
        ttlSeconds !== undefined && ttlSeconds > 0 ? ttlSeconds : 0,
        ...reservation.args,
      );
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

  /**
   * At an idle poll this is one command (XREADGROUP of new entries), sent in the drainer's one
   * write with the overdue claim and the backlog (ledger-drainer.ts): each round trip wakes the
   * process, and at a few hundred inquiries a second those wake-ups cost more than the entries.
   */
  private async readOnce(count: number): Promise<QueueMessage[]> {
    if (!this.groupReady) await this.ensureGroup();
    // 1. Ours, read before and not yet acknowledged (the last write to PostgreSQL failed).
    let entries = this.unacknowledged ? await this.readGroup(count, '0') : [];
    // 2. A dead consumer's (a replica killed after reading), idle long enough.
    // From here until an answer is in, this consumer may hold entries: a reply lost to a timeout
    // still leaves what Redis read for it pending here, so the next read looks there first.
    if (entries.length === 0 && Date.now() >= this.nextAutoclaim) {
      this.nextAutoclaim = Date.now() + this.claimIdleMs / 4;
      this.unacknowledged = true;
      const [claimed] = await Promise.all([
        this.client.xautoclaim(this.stream, GROUP, this.consumer, this.claimIdleMs, '0-0', 'COUNT', count) as Promise<
          [string, StreamEntries, string[]]
        >,
        // In the same write, now and then: a consumer silent for ten claim periods is gone.
        Date.now() >= this.nextForget && this.forgetDeadConsumers(),
      ]);
      entries = claimed[1].filter((entry) => entry !== null && Array.isArray(entry[1]));
    }
    // 3. New ones.
    if (entries.length === 0) {
      this.unacknowledged = true;
      entries = await this.readGroup(count, '>');
    }
    const { messages, unreadable } = this.open(entries);
    if (unreadable.length > 0) await this.client.xack(this.stream, GROUP, ...unreadable);
    this.unacknowledged = messages.length > 0;
    return messages;
  }

  /** Removes consumers of dead processes (none pending, silent 10 claim periods); how many. Never throws. */
  async forgetDeadConsumers(): Promise<number> {
    this.nextForget = Date.now() + this.claimIdleMs * 10;
    return this.scripts
      .vgwLedgerForgetDeadConsumers(this.stream, GROUP, this.claimIdleMs * 10, this.consumer)
      .catch(() => 0);
  }

  async ack(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.scripts.vgwLedgerAck(this.stream, GROUP, ...ids);
    this.unacknowledged = false;
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
      // `e`: the entry itself; `r` and `o`: the sealed record a settle or an overdue duty left
      // (standalone Redis), the entry derived from it here, off the inquiry path.
      const [field, sealed] = fields[0] === 't' ? [fields[2], fields[3]] : [fields[0], fields[1]];
      try {
        if (field === 'e') {
          messages.push({ id, entry: JSON.parse(this.cipher.open(sealed, context(trackId))) as QueuedEntry });
        } else {
          const record = JSON.parse(this.cipher.open(sealed, this.keys.inquiry(trackId))) as InquiryFactsInput;
          if (record.trackId !== trackId) throw new Error('a record under another trackId');
          messages.push({ id, entry: field === 'r' ? this.entryOf(record) : this.dutyOf(record).entry });
        }
      } catch {
        this.logger.error(`ledger entry ${id} on the stream cannot be opened; left on the stream`);
        unreadable.push(id);
      }
    }
    return { messages, unreadable };
  }

  /** A settlement's reservation to commit or release, if any: its keys, and the scripts' last arguments (now, the action). */
  private finishing(budget: BudgetAction | undefined): { keys: string[]; args: Array<string | number> } {
    return budget
      ? { keys: [this.reservations, this.reservationDeadlines], args: [Date.now(), budget] }
      : { keys: [], args: [] };
  }

  private seal(entry: QueuedEntry): string {
    return this.cipher.seal(JSON.stringify(entry), context(entry.trackId));
  }
}

/** Sealed values are bound to their trackId: a value moved between duty and stream still opens. */
function context(trackId: string): string {
  return `ledger:${trackId}`;
}
