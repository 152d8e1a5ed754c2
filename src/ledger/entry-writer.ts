import type { QueuedEntry } from './ledger-entry.js';

/** Why an entry was not written: the database's SQLSTATE and message (or the gateway's own check). */
export interface Refusal {
  code: string;
  message: string;
}

export interface ParkedEntry {
  entry: QueuedEntry;
  refusal: Refusal;
}

/** The writes EntryWriter needs: LedgerStore.insert and ParkedEntries.park. */
export interface EntryWrites {
  insert(entries: readonly QueuedEntry[]): Promise<number>;
}
export interface EntryParking {
  park(entry: QueuedEntry, refusal: Refusal): Promise<void>;
}

/**
 * SQLSTATE classes that blame the data, not the database: 22 data exception (an invalid
 * character, a number out of range, a bad date or uuid), 23 integrity constraint (a NOT NULL
 * or CHECK), 54 program limit (a value too large). Any other failure (a lost connection, a
 * timeout, 53 disk full, 57 shutdown, 40 deadlock, 42 a schema not migrated) is the database's:
 * the batch is retried with backoff, as before.
 */
const DATA_CLASSES = new Set(['22', '23', '54']);

/**
 * 23514 without a `constraint`: "no partition of relation … found for row". A CHECK's refusal
 * names its constraint (both engines: the PGlite worker keeps the field); this one names none,
 * and it is the schema's fault (a partition missing or detached), not the entry's.
 */
export function isMissingPartition(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === '23514' && (typeof constraint !== 'string' || constraint === '');
}

/** The refusal when `error` is the database refusing data; undefined for any other failure. */
export function refusalOf(error: unknown): Refusal | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || !DATA_CLASSES.has(code.slice(0, 2))) return undefined;
  // Parking good entries for a missing partition would lose them from the ledger for good.
  if (isMissingPartition(error)) return undefined;
  return { code, message: error instanceof Error ? error.message : 'refused' };
}

/** An instant as the gateway writes them (toISOString), years 0001 to 9999. */
const INSTANT = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isInstant(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const match = INSTANT.exec(value);
  if (!match || match[1] === '0000') return false;
  const time = Date.parse(value);
  return Number.isFinite(time) && new Date(time).toISOString() === value;
}

/**
 * What the database might take but the gateway cannot use: a date it would store ('infinity',
 * 'epoch', year 10000) but that partitioning (ledger-schema.ts) or a read (toISOString) throws
 * on, which would fail the whole batch with no SQLSTATE. Refused before the database with the
 * SQLSTATE it uses for a malformed date.
 */
export function screen(entry: QueuedEntry): Refusal | undefined {
  for (const field of ['createdAt', 'completedAt'] as const) {
    if (field === 'completedAt' && entry.completedAt === undefined) continue;
    if (!isInstant(entry[field])) {
      return {
        code: '22007',
        message: `${field} is not an ISO 8601 instant (YYYY-MM-DDTHH:mm:ss.sssZ, years 0001 to 9999); refused by the gateway before the database`,
      };
    }
  }
  return undefined;
}

/**
 * Writes a batch of entries so that no entry can stop the ledger (docs/runbooks.md,
 * LedgerEntriesParked): when the database refuses the batch for its data, the batch is split
 * in halves until each refused entry is alone; every other entry is written and each refused
 * one is parked with the database's error. A failure that is not about the data (the database
 * unreachable) or a failed parking is thrown: the caller acknowledges nothing and retries the
 * batch (writes are ON CONFLICT DO NOTHING, parking by the entry's digest: nothing twice).
 * Inserts per batch of n: 1 when clean; with k refused, at most 1 + 2·k·⌈log2 n⌉ and never over
 * 2n − 1 (all refused: every node of the halving tree), plus k parkings (entry-writer.spec.ts,
 * "isolates each refused entry…" and "parks every entry of a batch that holds nothing else").
 * A refusal costs no partition work: only a missing partition (not a refusal) retries an insert
 * (test/ledger-parking.integration.spec.ts, "costs one statement for an entry a CHECK refuses").
 */
export class EntryWriter {
  constructor(
    private readonly store: EntryWrites,
    private readonly parking: EntryParking,
  ) {}

  /** Every entry written or parked, or a throw; how many the database newly wrote and which were parked. */
  async write(entries: readonly QueuedEntry[]): Promise<{ written: number; parked: ParkedEntry[] }> {
    const parked: ParkedEntry[] = [];
    const fit: QueuedEntry[] = [];
    for (const entry of entries) {
      const refusal = screen(entry);
      if (refusal) await this.park(entry, refusal, parked);
      else fit.push(entry);
    }
    const written = await this.isolate(fit, parked);
    return { written, parked };
  }

  private async isolate(entries: readonly QueuedEntry[], parked: ParkedEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    try {
      return await this.store.insert(entries);
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      if (entries.length === 1) {
        await this.park(entries[0], refusal, parked);
        return 0;
      }
      const half = Math.ceil(entries.length / 2);
      const first = await this.isolate(entries.slice(0, half), parked);
      return first + (await this.isolate(entries.slice(half), parked));
    }
  }

  private async park(entry: QueuedEntry, refusal: Refusal, parked: ParkedEntry[]): Promise<void> {
    await this.parking.park(entry, refusal);
    parked.push({ entry, refusal });
  }
}
