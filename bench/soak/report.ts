/**
 * The soak's report (docs/soak.md, "The report"), computed from a run's run.json: every 5xx and
 * dropped connection attributed to the fault that explains it (those no fault explains are an
 * imbalance), each fault's healing, latency per phase, what reuse and coalescing saved in units
 * and money, and each replica's RSS. Pure but for the command line at the end:
 * `node .build/bench/soak/report.js <run.json>` prints the report of a saved run again.
 */
import { readFileSync } from 'node:fs';
import { latestFacts, REUSE_RULE, reusedUncharged, type BooksReport, type Imbalance } from './books.js';
import type { Run } from './chart.js';
import type { ClientAttempt, FaultWindow } from './explain.js';

/** A failure is explained by a fault when it overlaps the fault's window widened by this after its end. */
export const GRACE_MS = 5_000;

/** What one cost unit costs (COST_UNIT_PRICE): a decimal string and an ISO 4217 code. */
export interface UnitPrice {
  amount: string;
  currency: string;
}

/** A replica's resident memory (`process_resident_memory_bytes` of its /metrics). */
export interface ReplicaRss {
  replica: number;
  /** Right after the run's replicas started. */
  startBytes?: number;
  /** At the end, before stopping: the process then in that slot (faults restart replicas). */
  endBytes?: number;
}

/** The run.json the soak writes; the fields after chart.ts's are absent from older runs. */
export interface ReportRun extends Run {
  unitPrice?: UnitPrice;
  rss?: ReplicaRss[];
  books?: BooksReport;
  /** When the simulator first charged each trackId (ms). */
  chargedAt?: Record<string, number>;
}

export interface FaultReport {
  name: string;
  /** Seconds since the start of the day. */
  from: number;
  to: number;
  /** Failures (5xx, dropped connection, client timeout) it explains, by outcome. */
  failures: Record<string, number>;
  /**
   * Seconds from its end to the first fresh 200 (an answer not reused: the ledger has no
   * `reusedFrom` for its trackId) of a request sent after its end; undefined: none came.
   */
  firstOkAfter?: number;
  /** Seconds from its end to the last failure it explains; ≤ 0: none after its end. */
  lastFailureAfter?: number;
}

export interface PhaseReport {
  name: string;
  from: number;
  to: number;
  answers: number;
  failures: number;
  /** Milliseconds, client-side (sent to answered), over every attempt whatever its outcome. */
  p50: number;
  p99: number;
}

export interface SavingReport {
  /** Inquiries answered without an upstream call: each an upstream call saved. */
  callsSaved: number;
  hits: number;
  collapsed: number;
  /** Reused answers whose Cache-Status the run did not keep (older runs). */
  unclassified: number;
  unitsSaved: number;
  /** Units of the inquiries the simulator did charge (the ledger's `charged: yes`, not reused). */
  unitsPaid: number;
  /** unitsSaved / (unitsPaid + unitsSaved): the share of what the traffic would have paid. */
  share: number;
  upstreamCalls: number;
  money?: { saved: string; paid: string; currency: string; unitPrice: string };
}

export interface SoakReport {
  graceMs: number;
  faults: FaultReport[];
  phases: PhaseReport[];
  /** Failures no fault explains (each is an imbalance). */
  unexplained: ClientAttempt[];
  saving: SavingReport;
  rss: ReplicaRss[];
  imbalances: Imbalance[];
}

/** A 5xx answer, a dropped connection or the client's own timeout. */
export const isFailure = (outcome: string) =>
  /^5\d\d$/.test(outcome) || outcome === 'connection' || outcome === 'timeout';

/** Percentile of sorted values (nearest rank); 0 for none. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] : 0;
}

/**
 * The fault that explains an attempt: of the windows its flight [sentAt, answeredAt] overlaps,
 * each widened by `graceMs` after its end, the one that began last.
 */
export function faultOf(attempt: ClientAttempt, faults: readonly FaultWindow[], graceMs: number): number | undefined {
  let found: number | undefined;
  faults.forEach((f, i) => {
    if (
      attempt.sentAt <= f.to + graceMs &&
      attempt.answeredAt >= f.from &&
      (found === undefined || f.from >= faults[found].from)
    )
      found = i;
  });
  return found;
}

/**
 * Where a fault of the upstream's next N calls ends: it outlasts its scheduled window while calls
 * remain to take (token calls take them too, and a failed token renewal backs off, shared by every
 * replica), so it lasts until the first inquiry call after its last one was taken, and at least
 * until `to`; never wholly taken, until `end`.
 */
export function countedFaultEnd(
  to: number,
  lastTakenAt: number | undefined,
  calls: readonly { at: number }[],
  end: number,
): number {
  if (lastTakenAt === undefined) return Math.max(to, end);
  const next = calls.filter((c) => c.at > lastTakenAt).reduce((first, c) => Math.min(first, c.at), Infinity);
  return Math.max(to, next === Infinity ? end : next);
}

/** `amount` × `units`, exactly (BigInt on the scaled decimal), with thousands separators. */
export function money(amount: string, units: number): string {
  const [whole, fraction = ''] = amount.split('.');
  const digits = (BigInt(whole + fraction) * BigInt(units)).toString().padStart(fraction.length + 1, '0');
  const integer = digits.slice(0, digits.length - fraction.length).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const decimals = digits.slice(digits.length - fraction.length).replace(/0+$/, '');
  return decimals ? `${integer}.${decimals}` : integer;
}

export function buildReport(run: ReportRun, options: { graceMs?: number; unitPrice?: UnitPrice } = {}): SoakReport {
  const graceMs = options.graceMs ?? GRACE_MS;
  const s = (ms: number) => (ms - run.started) / 1000;
  const faults = [...run.faults].sort((a, b) => a.from - b.from);

  const attributed = faults.map(() => [] as ClientAttempt[]);
  const unexplained: ClientAttempt[] = [];
  for (const a of run.attempts.filter((a) => isFailure(a.outcome))) {
    const i = faultOf(a, faults, graceMs);
    (i === undefined ? unexplained : attributed[i]).push(a);
  }
  const reusedIds = new Set(run.entries.filter((e) => e.reusedFrom).map((e) => e.trackId.toLowerCase()));
  const fresh = run.attempts.filter((a) => a.outcome === '200' && a.trackId && !reusedIds.has(a.trackId.toLowerCase()));
  const faultReports = faults.map((f, i): FaultReport => {
    const failures: Record<string, number> = {};
    for (const a of attributed[i]) failures[a.outcome] = (failures[a.outcome] ?? 0) + 1;
    const ok = fresh.filter((a) => a.sentAt >= f.to).reduce((first, a) => Math.min(first, a.answeredAt), Infinity);
    const last = attributed[i].reduce((latest, a) => Math.max(latest, a.answeredAt), -Infinity);
    return {
      name: f.name,
      from: s(f.from),
      to: s(f.to),
      failures,
      ...(ok !== Infinity ? { firstOkAfter: (ok - f.to) / 1000 } : {}),
      ...(last !== -Infinity ? { lastFailureAfter: (last - f.to) / 1000 } : {}),
    };
  });

  // Phases: calm until the first fault, then from each fault's start to the next one's.
  const bounds = [{ name: 'calm', from: run.started }, ...faults.map((f) => ({ name: f.name, from: f.from }))].map(
    (b, i, all) => ({ ...b, to: i + 1 < all.length ? all[i + 1].from : run.ended }),
  );
  const phases = bounds.map((b, i): PhaseReport => {
    const inside = run.attempts.filter(
      (a) => (i === 0 || a.sentAt >= b.from) && (i === bounds.length - 1 || a.sentAt < b.to),
    );
    const latencies = inside.map((a) => a.answeredAt - a.sentAt).sort((x, y) => x - y);
    return {
      name: b.name,
      from: s(b.from),
      to: s(b.to),
      answers: inside.length,
      failures: inside.filter((a) => isFailure(a.outcome)).length,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
    };
  });

  const cacheStatus = new Map(
    run.attempts.filter((a) => a.trackId && a.cacheStatus).map((a) => [a.trackId!.toLowerCase(), a.cacheStatus!]),
  );
  const facts = [...latestFacts(run.entries)];
  const reused = facts.filter(([, e]) => e.reusedFrom);
  const collapsed = reused.filter(([id]) => cacheStatus.get(id)?.includes('collapsed')).length;
  const classified = reused.filter(([id]) => cacheStatus.has(id)).length;
  const unitsSaved = reused.reduce((sum, [, e]) => sum + (e.unitsSaved ?? 0), 0);
  const unitsPaid = facts
    .filter(([, e]) => e.charged === 'yes' && !e.reusedFrom)
    .reduce((sum, [, e]) => sum + e.costUnits, 0);
  const price = options.unitPrice ?? run.unitPrice;
  const saving: SavingReport = {
    callsSaved: reused.length,
    hits: classified - collapsed,
    collapsed,
    unclassified: reused.length - classified,
    unitsSaved,
    unitsPaid,
    share: unitsPaid + unitsSaved > 0 ? unitsSaved / (unitsPaid + unitsSaved) : 0,
    upstreamCalls: run.upstreamCalls.filter((c) => c.trackId).length,
    ...(price
      ? {
          money: {
            saved: money(price.amount, unitsSaved),
            paid: money(price.amount, unitsPaid),
            currency: price.currency,
            unitPrice: price.amount,
          },
        }
      : {}),
  };

  const imbalances: Imbalance[] = unexplained.length
    ? [
        {
          rule: 'a 5xx or dropped connection no fault explains',
          trackIds: unexplained.flatMap((a) => (a.trackId ? [a.trackId] : [])),
          detail: unexplained
            .slice(0, 20)
            .map((a) => `${a.requestId} ${a.outcome} at ${s(a.answeredAt).toFixed(1)} s`)
            .join(', '),
        },
      ]
    : [];
  return { graceMs, faults: faultReports, phases, unexplained, saving, rss: run.rss ?? [], imbalances };
}

const sec = (seconds: number) => `${seconds.toFixed(1)} s`;
const mib = (bytes?: number) => (bytes === undefined ? '—' : `${(bytes / 2 ** 20).toFixed(1)} MiB`);

/** The report as printed lines. */
export function formatReport(report: SoakReport): string[] {
  const lines = [
    `\n== Faults (failures explained: 5xx, connection, timeout; grace ${report.graceMs / 1000} s after each)`,
  ];
  lines.push(
    '  # fault: start–end, failures by outcome; healed: first fresh (not reused) 200 sent after its end; last failure it explains',
  );
  report.faults.forEach((f, i) => {
    const failures = Object.entries(f.failures)
      .sort()
      .map(([outcome, n]) => `${outcome}×${n}`)
      .join(' ');
    lines.push(
      `  ${i + 1} ${f.name}: ${sec(f.from)}–${sec(f.to)}, ${failures || 'no failures'}; ` +
        `healed ${f.firstOkAfter === undefined ? 'never' : `+${sec(f.firstOkAfter)}`}; ` +
        `last failure ${f.lastFailureAfter === undefined ? 'none' : f.lastFailureAfter <= 0 ? 'within it' : `+${sec(f.lastFailureAfter)}`}`,
    );
  });
  lines.push(`  no fault: ${report.unexplained.length}`);
  for (const a of report.unexplained.slice(0, 20))
    lines.push(
      `    UNEXPLAINED ${a.kind} ${a.requestId} on replica ${a.replica}: ${a.outcome}${a.problem ? ` ${a.problem}` : ''}`,
    );

  lines.push('\n== Latency per phase (client-side, every attempt; phase = from a fault to the next)');
  for (const p of report.phases)
    lines.push(
      `  ${p.name} (${sec(p.from)}–${sec(p.to)}): ${p.answers} answers, ${p.failures} failures, p50 ${p.p50} ms, p99 ${p.p99} ms`,
    );

  const v = report.saving;
  lines.push('\n== Saved by reuse and coalescing');
  lines.push(
    `  upstream calls saved: ${v.callsSaved} (stored answers ${v.hits}, joined in flight ${v.collapsed}` +
      `${v.unclassified ? `, unclassified ${v.unclassified}` : ''}); upstream inquiry calls made: ${v.upstreamCalls}`,
  );
  lines.push(
    `  units saved: ${v.unitsSaved} of ${v.unitsPaid + v.unitsSaved} the traffic would have paid (${(v.share * 100).toFixed(1)} %); paid ${v.unitsPaid}`,
  );
  lines.push(
    v.money
      ? `  money saved: ${v.money.saved} ${v.money.currency} (paid ${v.money.paid} ${v.money.currency}, at ${v.money.unitPrice} ${v.money.currency} a unit)`
      : '  money: no COST_UNIT_PRICE, units only',
  );

  lines.push('\n== RSS per replica (/metrics process_resident_memory_bytes)');
  if (report.rss.length === 0) lines.push('  not recorded');
  for (const r of report.rss) lines.push(`  replica ${r.replica}: start ${mib(r.startBytes)}, end ${mib(r.endBytes)}`);
  return lines;
}

/** `process_resident_memory_bytes` from a Prometheus text exposition. */
export function rssOf(metrics: string): number | undefined {
  const match = /^process_resident_memory_bytes(?:\{[^}]*\})? ([0-9.e+]+)/m.exec(metrics);
  return match ? Number(match[1]) : undefined;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input] = process.argv.slice(2);
  if (!input) throw new Error('usage: report.js <run.json>   (COST_UNIT_PRICE for a run that did not record one)');
  const run = JSON.parse(readFileSync(input, 'utf8')) as ReportRun;
  const price = process.env.COST_UNIT_PRICE ? (JSON.parse(process.env.COST_UNIT_PRICE) as UnitPrice) : undefined;
  const report = buildReport(run, { unitPrice: run.unitPrice ?? price });
  for (const line of formatReport(report)) console.log(line);
  const imbalances = [...(run.books?.imbalances ?? []), ...report.imbalances];
  // A run from before the reuse rule was in the books: checked here, from its charges and ledger.
  if (!imbalances.some((i) => i.rule === REUSE_RULE)) {
    const broken = reusedUncharged({
      charges: new Map(Object.entries(run.charges)),
      entries: run.entries,
      chargedAt: new Map(Object.entries(run.chargedAt ?? {})),
    });
    if (broken.length) imbalances.push({ rule: REUSE_RULE, trackIds: broken });
  }
  for (const imbalance of imbalances)
    console.log(
      `  IMBALANCE: ${imbalance.rule}${imbalance.detail ? `: ${imbalance.detail}` : ''} ${imbalance.trackIds.slice(0, 20).join(' ')}`,
    );
  console.log(imbalances.length === 0 ? '\nThe books balance.' : `\n${imbalances.length} imbalance(s).`);
  process.exitCode = imbalances.length === 0 ? 0 : 1;
}
