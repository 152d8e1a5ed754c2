/**
 * The soak's books (docs/soak.md, "The check"): the simulator's own list of charges against the
 * gateway's ledger and budgets. Pure: the caller reads the lists, this says what does not balance.
 */

/** The fields of a ledger entry (GET /admin/ledger, NDJSON) the check reads. */
export interface BookEntry {
  trackId: string;
  kind: string;
  clientId: string;
  charged: string;
  costUnits: number;
  createdAt: string;
  completedAt?: string;
  revision?: number;
  reusedFrom?: string;
  unitsSaved?: number;
}

/** A daily window of GET /admin/budgets. */
export interface BookBudget {
  clientId: string;
  window: string;
  spentUnits: number;
}

export interface Books {
  /** The simulator's charges, how many times each trackId was charged. */
  charges: ReadonlyMap<string, number>;
  entries: readonly BookEntry[];
  budgets: readonly BookBudget[];
  /**
   * When the simulator first charged each trackId (ms): a reused answer's source must be charged
   * before the reuse was answered. Absent (a run.json from before it was kept): membership only.
   */
  chargedAt?: ReadonlyMap<string, number>;
  /** Budgets count from here (the last time Redis restarted empty): earlier inquiries are not counted. */
  budgetsCountFrom: string;
}

export interface Imbalance {
  rule: string;
  trackIds: string[];
  detail?: string;
}

export interface BooksReport {
  inquiries: number;
  charged: number;
  unknown: number;
  notCharged: number;
  reused: number;
  unitsSaved: number;
  imbalances: Imbalance[];
}

/** An inquiry's latest fact: its highest-revision `reconciled` entry, else its `settled` or `overdue` one. */
export function latestFacts(entries: readonly BookEntry[]): Map<string, BookEntry> {
  const latest = new Map<string, BookEntry>();
  for (const entry of entries) {
    const id = entry.trackId.toLowerCase();
    const held = latest.get(id);
    const rank = (e: BookEntry) => (e.kind === 'reconciled' ? 1 + (e.revision ?? 1) : e.kind === 'settled' ? 1 : 0);
    if (!held || rank(entry) >= rank(held)) latest.set(id, entry);
  }
  return latest;
}

function add(imbalances: Imbalance[], rule: string, trackIds: string[], detail?: string): void {
  if (trackIds.length > 0 || detail) imbalances.push({ rule, trackIds, ...(detail ? { detail } : {}) });
}

export const REUSE_RULE = 'a reused answer whose source the simulator had not charged before it';

/**
 * Every reused answer (a `reusedFrom` in the ledger: a stored answer or one joined in flight) is one
 * the simulator did charge, and charged no later than the reused inquiry was answered (its
 * `completedAt`, else its `createdAt`). Returns the reused inquiries' trackIds that break it.
 */
export function reusedUncharged(books: Pick<Books, 'charges' | 'entries' | 'chargedAt'>): string[] {
  const charges = new Set([...books.charges.keys()].map((id) => id.toLowerCase()));
  const chargedAt = new Map([...(books.chargedAt ?? [])].map(([id, at]) => [id.toLowerCase(), at]));
  return [...latestFacts(books.entries)]
    .filter(([, e]) => e.reusedFrom)
    .filter(([, e]) => {
      const source = e.reusedFrom!.toLowerCase();
      if (!charges.has(source)) return true;
      const at = chargedAt.get(source);
      return at !== undefined && at > Date.parse(e.completedAt ?? e.createdAt);
    })
    .map(([id]) => id);
}

export function checkBooks(books: Books): BooksReport {
  const imbalances: Imbalance[] = [];
  const settledCount = new Map<string, number>();
  for (const e of books.entries)
    if (e.kind === 'settled')
      settledCount.set(e.trackId.toLowerCase(), (settledCount.get(e.trackId.toLowerCase()) ?? 0) + 1);
  const latest = latestFacts(books.entries);
  const charges = new Map([...books.charges].map(([id, n]) => [id.toLowerCase(), n]));

  add(
    imbalances,
    'a trackId the simulator charged more than once',
    [...charges].filter(([, n]) => n > 1).map(([id]) => id),
  );
  add(
    imbalances,
    'a charge of the simulator absent from the ledger',
    [...charges.keys()].filter((id) => !latest.has(id)),
  );
  add(
    imbalances,
    'a charge settled more than once in the ledger',
    [...settledCount].filter(([, n]) => n > 1).map(([id]) => id),
  );
  add(
    imbalances,
    'a charge the ledger calls not charged',
    [...charges.keys()].filter((id) => latest.get(id)?.charged === 'no'),
  );
  add(
    imbalances,
    'the ledger calls charged what the simulator never charged',
    [...latest].filter(([id, e]) => e.charged === 'yes' && !e.reusedFrom && !charges.has(id)).map(([id]) => id),
  );

  add(imbalances, REUSE_RULE, reusedUncharged(books));

  const spentByClient = new Map<string, number>();
  for (const e of latest.values())
    if (e.charged !== 'no' && !e.reusedFrom && e.createdAt >= books.budgetsCountFrom)
      spentByClient.set(e.clientId, (spentByClient.get(e.clientId) ?? 0) + e.costUnits);
  for (const budget of books.budgets) {
    if (budget.window !== 'daily' || budget.clientId === '*') continue;
    const ledgered = spentByClient.get(budget.clientId) ?? 0;
    if (ledgered !== budget.spentUnits)
      add(
        imbalances,
        'a budget whose spent is not the charged units of its window',
        [],
        `${budget.clientId}: budget says ${budget.spentUnits}, ledger ${ledgered}`,
      );
  }

  const facts = [...latest.values()];
  return {
    inquiries: facts.length,
    charged: facts.filter((e) => e.charged === 'yes').length,
    unknown: facts.filter((e) => e.charged === 'possibly').length,
    notCharged: facts.filter((e) => e.charged === 'no').length,
    reused: facts.filter((e) => e.reusedFrom).length,
    unitsSaved: facts.reduce((sum, e) => sum + (e.unitsSaved ?? 0), 0),
    imbalances,
  };
}
