import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisClient } from '../store/redis-connection.js';
import type { QueueMessage } from './ledger-queue.js';
import type { LedgerScripts } from './redis-ledger.scripts.js';

/** The stream's consumer group: every replica's drainer is one consumer in it. */
const GROUP = 'ledger-drainers';
/** A consumer silent this long is taken for dead: its unacknowledged entries are claimed. */
export const CLAIM_IDLE_MS = 60_000;

export type StreamEntries = Array<[id: string, fields: string[]]>;

/** What the queue makes of raw stream entries: the messages, and the ids it could not open. */
export type OpenEntries = (entries: StreamEntries) => { messages: QueueMessage[]; unreadable: string[] };

/**
 * This process's consumer in the ledger stream's group: what it reads (its own unacknowledged
 * entries first, then a dead consumer's, then new ones), acknowledges and forgets. Opening an
 * entry is the queue's (it holds the cipher and derives entries from records).
 */
export class LedgerStreamConsumer {
  /** This process's consumer name: unique per start, so a restarted replica's leftovers are claimed. */
  readonly name = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  private groupReady = false;
  /** Entries this consumer read and has not acknowledged (a failed write): read again first. */
  private unacknowledged = false;
  /** A dead consumer's entries are looked for this often, not at every poll. */
  private nextAutoclaim = 0;
  /** Our own pending entries are looked at as often, whatever this process believes it holds. */
  private nextOwnCheck = 0;
  /** Set by each (re)connection: the next read looks at our own pending entries first. */
  private reconnected = false;
  /** Dead consumers with nothing pending are forgotten this often (FORGET_DEAD_CONSUMERS in redis-ledger.scripts.ts). */
  private nextForget = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly scripts: LedgerScripts,
    private readonly stream: string,
    /** How long a consumer's unacknowledged entries wait before another takes them. */
    private readonly claimIdleMs: number,
  ) {
    client.on('ready', () => (this.reconnected = true));
  }

  async read(count: number, open: OpenEntries): Promise<QueueMessage[]> {
    try {
      return await this.readOnce(count, open);
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
  private async readOnce(count: number, open: OpenEntries): Promise<QueueMessage[]> {
    if (!this.groupReady) await this.ensureGroup();
    // 1. Ours, read before and not yet acknowledged (the last write to PostgreSQL failed); and,
    // after a reconnection or now and then, whatever Redis delivered to us unbeknown: ioredis
    // resends a read whose reply a dropped connection lost, and the resent one answers with the
    // entries after it (found by the soak: a charge missing from the ledger for a claim period;
    // test/ledger-queue.integration.spec.ts, "a read resent").
    const ownCheck = this.reconnected || Date.now() >= this.nextOwnCheck;
    if (ownCheck) {
      this.reconnected = false;
      this.nextOwnCheck = Date.now() + this.claimIdleMs / 4;
    }
    let entries = this.unacknowledged || ownCheck ? await this.readGroup(count, '0') : [];
    // 2. A dead consumer's (a replica killed after reading), idle long enough.
    // From here until an answer is in, this consumer may hold entries: a reply lost to a timeout
    // still leaves what Redis read for it pending here, so the next read looks there first.
    if (entries.length === 0 && Date.now() >= this.nextAutoclaim) {
      this.nextAutoclaim = Date.now() + this.claimIdleMs / 4;
      this.unacknowledged = true;
      const [claimed] = await Promise.all([
        this.client.xautoclaim(this.stream, GROUP, this.name, this.claimIdleMs, '0-0', 'COUNT', count) as Promise<
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
    const { messages, unreadable } = open(entries);
    if (unreadable.length > 0) await this.client.xack(this.stream, GROUP, ...unreadable);
    this.unacknowledged = messages.length > 0;
    return messages;
  }

  /** Removes consumers of dead processes (none pending, silent 10 claim periods); how many. Never throws. */
  async forgetDeadConsumers(): Promise<number> {
    this.nextForget = Date.now() + this.claimIdleMs * 10;
    return this.scripts
      .vgwLedgerForgetDeadConsumers(this.stream, GROUP, this.claimIdleMs * 10, this.name)
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
      this.name,
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
}
