import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { InquiryList } from '../../src/ledger/inquiry-list.js';
import { PgliteLedgerDatabase } from '../../src/ledger/ledger-database.js';
import { trends, unitsSpentSince } from '../../src/ledger/ledger-trends.js';
import { usage } from '../../src/ledger/ledger-usage.js';
import { LedgerStore } from '../../src/ledger/ledger.store.js';
import { StoreCipher } from '../../src/store/store-cipher.js';
import { generateEntries } from './console-entries.js';

const DAY_MS = 86_400_000;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * The embedded engine (PGlite, on disk, in its worker thread as the gateway runs it) with
 * `entries` over `days` days made in SQL: the console's reads called on the store directly
 * (no HTTP: PGlite answers one statement at a time, so the page's reads are their sum).
 */
export async function embeddedFigures(entries: number, days: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'vgw-bench-console-'));
  const db = await PgliteLedgerDatabase.open(dir);
  try {
    const store = new LedgerStore(db, new StoreCipher([]), 90, ['Asia/Tehran']);
    const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
    await store.ready();
    const began = performance.now();
    const written = await generateEntries(db, entries, days, today, (line) => console.log(line));
    console.log(`${written} entries in PGlite (${days} days) in ${(performance.now() - began).toFixed(0)} ms`);
    const from = new Date(today - 29 * DAY_MS);
    const to = new Date(today + DAY_MS);
    const now = new Date();
    const list = new InquiryList(store);
    const reads: Array<[string, () => Promise<unknown>]> = [
      ['trends (30 days, Asia/Tehran)', () => trends(store, from, to, 'Asia/Tehran')],
      ['usage?period=month (31 days)', () => usage(store, new Date(today - 31 * DAY_MS), to, 'month')],
      [
        'forecast sums (7 days, the month)',
        () => unitsSpentSince(store, [new Date(now.getTime() - 7 * DAY_MS), new Date(today - 27 * DAY_MS)], now),
      ],
      ['inquiries (first page, 50)', () => list.page({ from, to }, undefined, 50)],
      ['trends (the whole period)', () => trends(store, new Date(today - (days - 1) * DAY_MS), to, 'Asia/Tehran')],
    ];
    const sums: number[] = [];
    for (let run = 0; run < 5; run++) {
      let sum = 0;
      for (const [, read] of reads.slice(0, 4)) {
        const start = performance.now();
        await read();
        sum += performance.now() - start;
      }
      sums.push(sum);
    }
    console.log(`\nPGlite, the page's ledger reads one after another (median of 5): ${median(sums).toFixed(0)} ms`);
    for (const [name, read] of reads) {
      const times: number[] = [];
      for (let run = 0; run < 5; run++) {
        const start = performance.now();
        await read();
        times.push(performance.now() - start);
      }
      console.log(`  ${name.padEnd(44)} ${median(times).toFixed(0)} ms`);
    }
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
