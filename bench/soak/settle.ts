/**
 * The end of the soak's day (docs/soak.md, "The check"): once the ledger's queue has drained, the
 * gateway reconciles against the simulator's list of charges, and the books (bench/soak/books.ts)
 * are checked: the simulator's charges against the ledger and the budgets, as an operator reads them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { checkBooks, type BookBudget, type BookEntry, type BooksReport } from './books.js';
import type { SoakRun } from './run-state.js';
import { OPERATOR, type SoakWorld } from './world.js';

export interface SettledBooks {
  /** The ledger after the reconciliation. */
  entries: BookEntry[];
  /** The reconciliation's answer (POST /admin/reconciliations). */
  reconciled: Record<string, unknown>;
  books: BooksReport;
}

export async function settleAndCheckBooks(world: SoakWorld, run: SoakRun): Promise<SettledBooks> {
  const { sim } = world;
  const replica = world.replicas[0];
  const admin = { 'x-api-key': OPERATOR.key };
  // An hour either side of the day, so that the window holds every entry of the run.
  const window = `from=${new Date(run.started - 3_600_000).toISOString()}&to=${new Date(Date.now() + 3_600_000).toISOString()}`;
  async function readLedger(): Promise<BookEntry[]> {
    const response = await fetch(`${replica.url}/admin/ledger?${window}`, { headers: admin });
    if (!response.ok) throw new Error(`GET /admin/ledger: ${response.status} ${await response.text()}`);
    return (await response.text())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as BookEntry);
  }

  // The queue drained: the ledger stops growing (two reads 2 s apart agree), within 60 s.
  let entries = await readLedger();
  for (let i = 0; i < 30; i++) {
    await sleep(2_000);
    const again = await readLedger();
    if (again.length === entries.length) break;
    entries = again;
  }
  const csv = ['trackId', ...sim.chargesByTrackId.keys()].join('\n');
  const reconciliation = await fetch(`${replica.url}/admin/reconciliations?${window}`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'text/csv' },
    body: csv,
  });
  const reconciled = (await reconciliation.json()) as Record<string, unknown>;
  run.log(`reconciliation: ${reconciliation.status}`);
  entries = await readLedger();
  const budgets = (await (await fetch(`${replica.url}/admin/budgets`, { headers: admin })).json()) as {
    budgets: (BookBudget & { window?: string })[];
  };
  const books = checkBooks({
    charges: sim.chargesByTrackId,
    chargedAt: sim.chargedAt,
    entries,
    budgets: budgets.budgets,
    budgetsCountFrom: run.budgetCountsFrom,
  });
  return { entries, reconciled, books };
}
