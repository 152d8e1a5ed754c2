// Trends of the last 30 days (GET /admin/trends): spend per day stacked by the top clients and
// "the rest"; what went wrong (failed and unknown) and what was refused (429 budget or quota)
// per day the same way; and, for one day, who had which failure, the upstream's code beside its
// message, and who was refused why.
import { stackedBars, topAndRest } from '/console/charts.js';
import { addDays, dayText, display, recordedLines, recordedMoney, unitsText } from '/console/format.js';
import { h, note, number, table } from '/console/views.js';

/** Per key, a value per day from the rows. */
function perDay(rows, days, keyOf, valueOf) {
  const index = new Map(days.map((day, i) => [day, i]));
  const byKey = new Map();
  for (const row of rows) {
    const i = index.get(row.day);
    if (i === undefined) continue;
    const key = keyOf(row);
    if (!byKey.has(key)) byKey.set(key, new Array(days.length).fill(0));
    byKey.get(key)[i] += valueOf(row);
  }
  return byKey;
}

const MEASURES = {
  spend: { label: 'units spent', value: (row) => row.unitsSpent, text: unitsText },
  inquiries: { label: 'inquiries', value: (row) => row.inquiries, text: (n) => unitsText(n) },
  reused: { label: 'reused answers', value: (row) => row.reused, text: (n) => unitsText(n) },
};

/**
 * The spend of `keys` on day `d` (all the days shown when undefined): their rows' `spentAmount`s
 * summed exactly, other currencies and unpriced units apart, the units (the bar) beside. `rows`:
 * the days shown only.
 */
function spendText(rows, days, currency) {
  const index = new Map(days.map((day, i) => [day, i]));
  const cells = new Map();
  for (const row of rows) {
    if (!cells.has(row.clientId))
      cells.set(
        row.clientId,
        days.map(() => []),
      );
    cells.get(row.clientId)[index.get(row.day)].push(row);
  }
  return (units, keys, d) => {
    const picked = keys.flatMap((key) => (d === undefined ? cells.get(key)?.flat() : cells.get(key)?.[d]) ?? []);
    return `${recordedLines(recordedMoney(picked, currency).all, 'spent').join(' ')} (${unitsText(units)} units)`;
  };
}

/** What the money leaves out, said once: units without a recorded price, other currencies. */
function apartNote(all) {
  const others = recordedLines(all, 'spent')
    .slice(1)
    .filter((line) => !line.endsWith(' units unpriced'));
  const said = [
    all.unpriced.spent
      ? `${unitsText(all.unpriced.spent)} units spent in these 30 days recorded no price: shown as units, never priced at today’s price.`
      : '',
    others.length ? `Spent in other currencies (${others.join(' ')}): as recorded, not converted.` : '',
  ].filter(Boolean);
  return said.length ? note(said.join(' ')) : null;
}

/**
 * The spend (or inquiries, or reused) chart: top clients and the rest. Bars in units (every unit
 * spent is drawn, priced or not); with COST_UNIT_PRICE set, the spend's tooltips and legend say
 * its money at the prices recorded (never today's), unpriced units and other currencies apart.
 */
export function spendChart(answer, days, measureName) {
  const measure = MEASURES[measureName] ?? MEASURES.spend;
  const series = topAndRest(
    perDay(answer.rows, days, (row) => row.clientId, measure.value),
    days,
  );
  if (series.length === 0) return note(`No ${measure.label} in these 30 days.`);
  const shown = answer.rows.filter((row) => days.includes(row.day));
  const money = measure === MEASURES.spend ? recordedMoney(shown, answer.currency).all : undefined;
  const chart = stackedBars({
    id: 'spend-chart',
    days,
    series,
    dayLabel: (day) => dayText(day, true),
    valueText: money ? spendText(shown, days, answer.currency) : measure.text,
    tickText: unitsText,
    unit: `${measure.label} per day`,
    summary: `${measure.label} per day (${answer.timeZone})${money ? ' and their money at the prices recorded' : ''}, top clients and the rest, last 30 days`,
  });
  const apart = money ? apartNote(money) : null;
  return apart ? h('div', {}, apart, chart) : chart;
}

/** Failed and unknown inquiries per day, stacked by client (top and the rest). */
export function errorsChart(answer, days) {
  const series = topAndRest(
    perDay(
      answer.rows,
      days,
      (row) => row.clientId,
      (row) => row.failed + row.unknown,
    ),
    days,
  );
  if (series.length === 0) return note('No failed or unknown inquiry in these 30 days.');
  return stackedBars({
    id: 'errors-chart',
    days,
    series,
    dayLabel: (day) => dayText(day, true),
    valueText: unitsText,
    unit: 'inquiries per day',
    summary: `failed and unknown inquiries per day (${answer.timeZone}), top clients and the rest`,
  });
}

/** Inquiries refused with 429 before a trackId (budget and quotas) per day, stacked by client (top and the rest). */
export function refusalsChart(answer, days) {
  const refused = (row) => (row.refusedBudget ?? 0) + (row.refusedQuota ?? 0);
  const series = topAndRest(
    perDay(answer.rows, days, (row) => row.clientId, refused),
    days,
  );
  if (series.length === 0) return note('No inquiry refused by a budget or a quota in these 30 days.');
  // Refusals are tallied by their day in BUDGET_TIMEZONE only, also when the rows are asked in UTC.
  const chart = stackedBars({
    id: 'refusals-chart',
    days,
    series,
    dayLabel: (day) => dayText(day, true),
    valueText: unitsText,
    summary: `inquiries refused (429: budget exhausted or quota used up) per day (${display.budgetZone}), top clients and the rest`,
  });
  if (!display.utc) return chart;
  return h('div', {}, note(`Refusals are counted by day in ${display.budgetZone} (BUDGET_TIMEZONE), not UTC.`), chart);
}

/** One day: per client, failed by upstream code with its message, unknown, and refused (budget, quota). */
export function dayView(answer, day) {
  const failures = answer.failures.filter((row) => row.day === day).sort((a, b) => b.count - a.count);
  const unknown = answer.rows.filter((row) => row.day === day && row.unknown > 0);
  const rows = [
    ...failures.map((row) =>
      h(
        'tr',
        { 'data-client': row.clientId },
        h('th', { scope: 'row' }, row.clientId),
        h('td', {}, 'failed'),
        h(
          'td',
          {},
          row.upstreamCode === null
            ? 'no upstream answer'
            : `${row.upstreamCode}${row.upstreamMessage ? `: ${row.upstreamMessage}` : ''}`,
        ),
        number(row.count),
      ),
    ),
    ...unknown.map((row) =>
      h(
        'tr',
        { 'data-client': row.clientId },
        h('th', { scope: 'row' }, row.clientId),
        h('td', {}, 'unknown'),
        h('td', {}, `${row.operation}: awaiting reconciliation`),
        number(row.unknown),
      ),
    ),
    ...refusedOn(answer, day),
  ];
  if (rows.length === 0)
    return note(
      `Nothing went wrong on ${dayText(day)}; the charts above cover 30 days: pick another day to see its details.`,
    );
  return table(
    ['client', 'outcome', 'upstream code: message', 'inquiries'],
    rows,
    `What went wrong on ${dayText(day)}`,
  );
}

/** A day's refusals (429 before a trackId: never sent, never charged), per client, operation and reason. */
function refusedOn(answer, day) {
  const reasons = [
    ['refusedBudget', 'budget exhausted'],
    ['refusedQuota', 'quota used up'],
  ];
  return answer.rows
    .filter((row) => row.day === day)
    .flatMap((row) =>
      reasons
        .filter(([field]) => (row[field] ?? 0) > 0)
        .map(([field, why]) =>
          h(
            'tr',
            { 'data-client': row.clientId },
            h('th', { scope: 'row' }, row.clientId),
            h('td', {}, 'refused'),
            h('td', {}, `${row.operation}: 429, ${why}`),
            number(row[field]),
          ),
        ),
    );
}

/**
 * The day whose details are shown first: the latest of `days` with anything gone wrong (failed,
 * unknown or refused), else the last of them (today); never a quiet yesterday under a busy today.
 */
export function latestTroubledDay(answer, days) {
  const troubled = new Set(
    answer.rows
      .filter((row) => row.failed + row.unknown + (row.refusedBudget ?? 0) + (row.refusedQuota ?? 0) > 0)
      .map((row) => row.day),
  );
  return [...days].reverse().find((day) => troubled.has(day)) ?? days[days.length - 1];
}

/** The 30 civil days ending with `today` (in the zone the trends were counted in). */
export const lastDays = (today, count = 30) => Array.from({ length: count }, (_, i) => addDays(today, i - count + 1));

/** This replica's refusals since it started (GET /admin/status): refusals never reach the ledger. */
export function refusalsView(refusals) {
  if (!refusals) return null;
  const budget = refusals.budget.map(
    ({ budget, window, count }) => `${budget === '*' ? 'all clients' : budget} ${window}: ${count}`,
  );
  const quota = refusals.quota.map(({ scope, count }) => `${scope} quota: ${count}`);
  const all = [...budget, ...quota];
  return h(
    'p',
    { className: all.some((text) => !text.endsWith(': 0')) ? 'warn' : 'note', id: 'refusals' },
    `Refused by this replica since it started (429): ${all.length ? all.join(', ') : 'none'}. Per day and client, all replicas: the chart of refusals above.`,
  );
}
