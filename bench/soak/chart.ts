/**
 * The soak's chart (docs/soak.md, "The chart"): drawn from a run's run.json as plain SVG (no
 * dependency), then turned into a PNG by Debian's Chromium headless (`--screenshot`). Three
 * panels over the run's time, each fault a shaded band: throughput and p99 latency; inquiries
 * against upstream calls (the saving); the running money balance, the simulator's charges
 * against the ledger's. `node .build/bench/soak/chart.js <run.json> <out.png>`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BookEntry } from './books.js';
import type { ClientAttempt, FaultWindow } from './explain.js';

export interface Run {
  minutes: number;
  seed: number;
  started: number;
  ended: number;
  faults: FaultWindow[];
  attempts: ClientAttempt[];
  upstreamCalls: { at: number; trackId?: string }[];
  charges: Record<string, number>;
  entries: BookEntry[];
}

interface Series {
  label: string;
  colour: string;
  points: [number, number][];
}

const WIDTH = 1100;
const PANEL = 240;
const LEFT = 70;
const RIGHT = 70;
const TOP = 40;
const GAP = 60;

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Percentile of sorted values (nearest rank). */
function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0;
}

/** The three panels' series, in seconds since the start. */
export function seriesOf(
  run: Run,
  bucketSeconds = 5,
): { top: Series[]; right: Series[]; middle: Series[]; bottom: Series[] } {
  const length = (run.ended - run.started) / 1000;
  const buckets = Math.max(1, Math.ceil(length / bucketSeconds));
  const answered = Array.from({ length: buckets }, () => [] as number[]);
  for (const a of run.attempts) {
    const b = Math.min(buckets - 1, Math.max(0, Math.floor((a.answeredAt - run.started) / 1000 / bucketSeconds)));
    answered[b].push(a.answeredAt - a.sentAt);
  }
  const mid = (b: number) => (b + 0.5) * bucketSeconds;
  const throughput: [number, number][] = answered.map((l, b) => [mid(b), l.length / bucketSeconds]);
  const p99: [number, number][] = answered.map((l, b) => [
    mid(b),
    percentile(
      [...l].sort((x, y) => x - y),
      0.99,
    ),
  ]);

  const cumulative = (times: number[]): [number, number][] => {
    const sorted = times.map((t) => (t - run.started) / 1000).sort((x, y) => x - y);
    return [[0, 0], ...sorted.map((t, i): [number, number] => [t, i + 1])];
  };
  const inquiries = cumulative(run.attempts.filter((a) => a.trackId).map((a) => a.answeredAt));
  const upstream = cumulative(run.upstreamCalls.filter((c) => c.trackId).map((c) => c.at));

  // Money in cost units: the simulator's charges at the units the ledger recorded for them, by
  // the time of the upstream call; the ledger's charged (or possibly charged) units by entry time.
  const units = new Map<string, number>();
  for (const e of run.entries) units.set(e.trackId.toLowerCase(), e.costUnits);
  const firstCall = new Map<string, number>();
  for (const c of run.upstreamCalls)
    if (c.trackId && run.charges[c.trackId.toLowerCase()] && !firstCall.has(c.trackId.toLowerCase()))
      firstCall.set(c.trackId.toLowerCase(), c.at);
  const steps = (events: [number, number][]): [number, number][] => {
    let sum = 0;
    return [
      [0, 0],
      ...events.sort((x, y) => x[0] - y[0]).map(([t, u]): [number, number] => [(t - run.started) / 1000, (sum += u)]),
    ];
  };
  const charged = steps([...firstCall].map(([id, t]) => [t, (units.get(id) ?? 1) * (run.charges[id] ?? 1)]));
  const latest = new Map<string, BookEntry>();
  for (const e of run.entries)
    if (!latest.has(e.trackId.toLowerCase()) || e.kind !== 'overdue') latest.set(e.trackId.toLowerCase(), e);
  const ledgered = steps(
    [...latest.values()]
      .filter((e) => e.charged !== 'no' && !e.reusedFrom)
      .map((e) => [Date.parse(e.createdAt), e.costUnits]),
  );
  return {
    top: [{ label: 'answers per second', colour: '#1f6feb', points: throughput }],
    right: [{ label: 'p99 latency (ms)', colour: '#d1242f', points: p99 }],
    middle: [
      { label: 'inquiries answered (with a trackId)', colour: '#1f6feb', points: inquiries },
      { label: 'upstream calls', colour: '#bf8700', points: upstream },
    ],
    bottom: [
      { label: 'units the simulator charged', colour: '#bf8700', points: charged },
      { label: 'units the ledger holds as charged', colour: '#1a7f37', points: ledgered },
    ],
  };
}

const last = (s: Series) => s.points[s.points.length - 1]?.[1] ?? 0;

function maxOf(series: Series[]): number {
  return Math.max(1, ...series.flatMap((s) => s.points.map(([, y]) => y)));
}

function panel(
  y0: number,
  title: string,
  length: number,
  faults: { from: number; to: number; name: string }[],
  left: Series[],
  right: Series[] = [],
  /** Both sides on one scale (the same quantity from two sources, drawn over each other). */
  sameScale = false,
): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (t: number) => LEFT + (t / length) * plotWidth;
  const leftMax = maxOf(sameScale ? [...left, ...right] : left) * 1.1;
  const rightMax = sameScale ? leftMax : maxOf(right) * 1.1;
  const y = (v: number, max: number) => y0 + PANEL - (v / max) * PANEL;
  const parts: string[] = [
    `<text x="${LEFT}" y="${y0 - 10}" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<rect x="${LEFT}" y="${y0}" width="${plotWidth}" height="${PANEL}" fill="none" stroke="#999"/>`,
  ];
  faults.forEach((f, i) => {
    const width = Math.max(2, x(f.to) - x(f.from));
    parts.push(
      `<rect x="${x(f.from)}" y="${y0}" width="${width}" height="${PANEL}" fill="${i % 2 ? '#8250df' : '#cf222e'}" opacity="0.13"/>`,
    );
    parts.push(
      `<text x="${x(f.from) + 2}" y="${y0 + 12 + (i % 4) * 12}" font-size="10" fill="#8c1b24">${i + 1}</text>`,
    );
  });
  for (let i = 0; i <= 4; i++) {
    const v = (leftMax * i) / 4;
    parts.push(
      `<text x="${LEFT - 6}" y="${y(v, leftMax) + 4}" font-size="11" text-anchor="end">${Math.round(v)}</text>`,
    );
    if (right.length && !sameScale)
      parts.push(
        `<text x="${WIDTH - RIGHT + 6}" y="${y((rightMax * i) / 4, rightMax) + 4}" font-size="11">${Math.round((rightMax * i) / 4)}</text>`,
      );
  }
  for (let t = 0; t <= length; t += length > 300 ? 60 : 10)
    parts.push(`<text x="${x(t)}" y="${y0 + PANEL + 14}" font-size="11" text-anchor="middle">${t} s</text>`);
  const line = (s: Series, max: number, dashed: boolean) =>
    `<polyline fill="none" stroke="${s.colour}" stroke-width="1.8"${dashed ? ' stroke-dasharray="5 3"' : ''} points="${s.points
      .map(([t, v]) => `${x(t).toFixed(1)},${y(v, max).toFixed(1)}`)
      .join(' ')}"/>`;
  left.forEach((s) => parts.push(line(s, leftMax, false)));
  right.forEach((s) => parts.push(line(s, rightMax, true)));
  [...left, ...right].forEach((s, i) =>
    parts.push(
      `<text x="${LEFT + 10 + i * 300}" y="${y0 + PANEL + 32}" font-size="12" fill="${s.colour}">${right.includes(s) ? '- - ' : '— '}${escape(s.label)}${right.includes(s) && !sameScale ? ' (right axis)' : ''}</text>`,
    ),
  );
  return parts.join('\n');
}

/** The whole chart as an SVG document. */
export function chartSvg(run: Run): string {
  const length = Math.ceil((run.ended - run.started) / 1000);
  const faults = run.faults.map((f) => ({
    name: f.name,
    from: (f.from - run.started) / 1000,
    to: (f.to - run.started) / 1000,
  }));
  const s = seriesOf(run);
  const height = TOP + 3 * (PANEL + GAP) + 20 + faults.length * 15;
  const legendTop = TOP + 3 * (PANEL + GAP);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(TOP, `Throughput and p99 latency (${run.minutes} min, seed ${run.seed})`, length, faults, s.top, s.right),
    panel(
      TOP + PANEL + GAP,
      'Inquiries against upstream calls (the gap is reuse and coalescing)',
      length,
      faults,
      s.middle,
    ),
    panel(
      TOP + 2 * (PANEL + GAP),
      `Running money balance, in cost units (at the end: simulator ${last(s.bottom[0])}, ledger ${last(s.bottom[1])}, discrepancy ${last(s.bottom[0]) - last(s.bottom[1])})`,
      length,
      faults,
      [s.bottom[0]],
      [s.bottom[1]],
      true,
    ),
    ...faults.map(
      (f, i) =>
        `<text x="${LEFT}" y="${legendTop + i * 15}" font-size="12">${i + 1}. ${escape(f.name)}: ${f.from.toFixed(1)}–${f.to.toFixed(1)} s</text>`,
    ),
    '</svg>',
  ].join('\n');
}

/** Writes `out` (a PNG) from the SVG with Chromium headless; the SVG is written beside it. */
export function renderPng(svg: string, out: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'vgw-soak-chart-'));
  try {
    const file = join(dir, 'chart.svg');
    writeFileSync(file, svg);
    const height = Number(/height="(\d+)"/.exec(svg)?.[1] ?? 900);
    const shot = spawnSync(
      '/usr/bin/chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--hide-scrollbars',
        `--user-data-dir=${join(dir, 'profile')}`,
        `--screenshot=${join(dir, 'chart.png')}`,
        `--window-size=${WIDTH},${height}`,
        `file://${file}`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (shot.status !== 0) throw new Error(`chromium: ${shot.stderr}`);
    renameSync(join(dir, 'chart.png'), out);
    writeFileSync(out.replace(/\.png$/, '.svg'), svg);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, out] = process.argv.slice(2);
  if (!input || !out) throw new Error('usage: chart.js <run.json> <out.png>');
  renderPng(chartSvg(JSON.parse(readFileSync(input, 'utf8')) as Run), out);
  console.log(`chart written to ${out}`);
}
