import { Logger } from '@nestjs/common';
import type { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import { reserveArgs, reserveKeys, reserveResult } from '../budget/redis-budget.store.js';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { QueuedEntry } from './ledger-entry.js';
import { LedgerQueue, type BudgetAction, type InquiryFactsInput, type QueueMessage } from './ledger-queue.js';
import { ledgerScriptsOn, type LedgerScripts } from './redis-ledger.scripts.js';
import { CLAIM_IDLE_MS, LedgerStreamConsumer, type StreamEntries } from './redis-ledger.stream.js';

export { CLAIM_IDLE_MS } from './redis-ledger.stream.js';

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
  private readonly group: LedgerStreamConsumer;
  /**
   * Standalone Redis: the record store writes the duty and the entry in the record's own
   * command (createWithRecord, settleWithRecord): one command per write, the record sent once.
   * In a Cluster the record and the queue are in different slots: one more command per write.
   */
  readonly fusesRecords: boolean;

  constructor(
    client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
    prices: InquiryPrices,
    /** How long a consumer's unacknowledged entries wait before another takes them. */
    claimIdleMs = CLAIM_IDLE_MS,
  ) {
    super(prices, cipher.enabled);
    this.due = keys.ledger('due');
    this.reservations = keys.budgetReservations();
    this.reservationDeadlines = keys.budgetDeadlines();
    this.duties = keys.ledger('duties');
    this.stream = keys.ledger('entries');
    this.scripts = ledgerScriptsOn(client);
    this.fusesRecords = !client.isCluster;
    this.group = new LedgerStreamConsumer(client, this.scripts, this.stream, claimIdleMs);
  }

  /** This process's consumer name in the stream's group. */
  get consumer(): string {
    return this.group.name;
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

  read(count: number): Promise<QueueMessage[]> {
    return this.group.read(count, (entries) => this.open(entries));
  }

  /** Removes consumers of dead processes (none pending, silent 10 claim periods); how many. Never throws. */
  forgetDeadConsumers(): Promise<number> {
    return this.group.forgetDeadConsumers();
  }

  ack(ids: readonly string[]): Promise<void> {
    return this.group.ack(ids);
  }

  backlog(now: number): Promise<{ depth: number; oldestAgeSeconds: number }> {
    return this.group.backlog(now);
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
