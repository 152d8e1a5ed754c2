// Money panels: each budget with its bar and forecast, the company's month, and what each client
// spent this month (GET /admin/budgets, GET /admin/forecast, GET /admin/usage for reuse savings).
import { display, moneyText, unitsText } from '/console/format.js';
import { h, note, number, table, time } from '/console/views.js';

/** Units, and their money beside them when COST_UNIT_PRICE is set. */
export function unitsAndMoney(units, attributes = {}) {
  const money = moneyText(units);
  return h(
    'td',
    { className: 'num', ...attributes },
    unitsText(units),
    money ? h('span', { className: 'money' }, money) : null,
  );
}

const clientName = (clientId) => (clientId === '*' ? 'all clients (*)' : clientId);

function runsOut(forecast) {
  if (forecast.runsOutAt === null) return h('td', { className: 'good' }, 'not this window');
  if (forecast.usedUnits >= forecast.limitUnits) return h('td', { className: 'bad' }, 'used up');
  return h('td', { className: 'warn' }, time(forecast.runsOutAt, true));
}

/** Budgets (bars from GET /admin/budgets' state) with their forecast beside each. */
export function budgetsView(forecast) {
  const rows = forecast.budgets.map((budget) => {
    const label = `${budget.clientId === '*' ? 'all clients' : budget.clientId}, ${budget.window}: ${budget.usedUnits} of ${budget.limitUnits} units`;
    return h(
      'tr',
      { 'data-client': budget.clientId, 'data-window': budget.window },
      h('th', { scope: 'row' }, clientName(budget.clientId)),
      h('td', {}, budget.window),
      h(
        'td',
        {},
        h('meter', {
          min: 0,
          max: budget.limitUnits,
          value: Math.min(budget.usedUnits, budget.limitUnits),
          low: budget.limitUnits * 0.8,
          high: budget.limitUnits * 0.99,
          optimum: 0,
          'aria-label': label,
          title: label,
        }),
      ),
      unitsAndMoney(budget.usedUnits, { 'data-field': 'used' }),
      number(budget.limitUnits),
      h('td', { className: 'num', 'data-field': 'rate' }, `${budget.ratePerDay} / day`),
      runsOut(budget),
      h('td', { className: 'when' }, time(budget.resetsAt, true)),
    );
  });
  if (rows.length === 0) return note('No budget is configured (BUDGETS).');
  return table(
    [
      'client',
      'window',
      'used',
      'used (spent + reserved)',
      'limit',
      `rate (last ${forecast.rateDays} days)`,
      'runs out',
      'resets',
    ],
    rows,
    'Budgets and when they run out',
  );
}

/** The company's month: spent so far, the rate, where it leads by the window's end. */
export function companyView(forecast) {
  const { company } = forecast;
  return h(
    'dl',
    { className: 'facts', id: 'company' },
    h(
      'div',
      {},
      h('dt', {}, 'This month'),
      h('dd', {}, time(company.startsAt, true), ' – ', time(company.resetsAt, true)),
    ),
    h(
      'div',
      {},
      h('dt', {}, 'Spent so far'),
      h('dd', { id: 'company-spent' }, unitsText(company.spentUnits), ' units ', moneyText(company.spentUnits)),
    ),
    h(
      'div',
      {},
      h('dt', {}, `Rate (last ${forecast.rateDays} days)`),
      h('dd', {}, `${company.ratePerDay} units / day`),
    ),
    h(
      'div',
      {},
      h('dt', {}, 'At this rate, by the month’s end'),
      h(
        'dd',
        { id: 'company-projected' },
        unitsText(company.projectedUnits),
        ' units ',
        moneyText(company.projectedUnits),
      ),
    ),
  );
}

/**
 * What each client spent this month, from the ledger; reuse savings where the usage answer has
 * `unitsSaved` (a gateway without reuse has none: the column is left out).
 */
export function clientsView(forecast, usageRows) {
  const saved = new Map();
  for (const row of usageRows)
    if (typeof row.unitsSaved === 'number') saved.set(row.clientId, (saved.get(row.clientId) ?? 0) + row.unitsSaved);
  const withSavings = saved.size > 0;
  const clients = [...forecast.clients].sort(
    (a, b) => b.spentUnits - a.spentUnits || a.clientId.localeCompare(b.clientId),
  );
  if (clients.length === 0) return note('Nothing spent this month.');
  const total = clients.reduce((sum, client) => sum + client.spentUnits, 0);
  const rows = clients.map((client) =>
    h(
      'tr',
      { 'data-client': client.clientId },
      h('th', { scope: 'row' }, client.clientId),
      unitsAndMoney(client.spentUnits, { 'data-field': 'spent' }),
      unitsAndMoney(client.lastDaysUnits),
      withSavings ? unitsAndMoney(saved.get(client.clientId) ?? 0, { 'data-field': 'saved' }) : null,
    ),
  );
  rows.push(
    h(
      'tr',
      { className: 'total', 'data-client': '' },
      h('th', { scope: 'row' }, 'all clients'),
      unitsAndMoney(total, { 'data-field': 'spent' }),
      unitsAndMoney(forecast.company.lastDaysUnits),
      withSavings ? unitsAndMoney([...saved.values()].reduce((a, b) => a + b, 0)) : null,
    ),
  );
  const headings = [
    'client',
    'spent this month',
    `last ${forecast.rateDays} days`,
    ...(withSavings ? ['saved by reuse'] : []),
  ];
  return table(headings, rows, 'Spent this month per client');
}

/** The price line under the heading: what a unit costs, or that no money is shown. */
export function priceNote() {
  if (!display.price) return note('Units only: COST_UNIT_PRICE is not set, so no money is shown.');
  return note(`One unit costs ${moneyText(1)} (COST_UNIT_PRICE); money = units recorded in the ledger × that price.`);
}
