// Money panels: each budget with its bar and forecast, the company's month, and what each client
// spent this month (GET /admin/budgets, GET /admin/forecast, GET /admin/usage for the money spent
// and saved: each inquiry's units × the unit price recorded when it was made).
import { display, moneyText, recordedLines, recordedMoney, unitsText } from '/console/format.js';
import { h, note, number, table, time } from '/console/views.js';

/** Units, and under them each line of `money` (a text or lines of text), when there is any. */
function unitsWith(units, money, attributes = {}) {
  const lines = (Array.isArray(money) ? money : [money]).filter(Boolean);
  return h(
    'td',
    { className: 'num', ...attributes },
    unitsText(units),
    ...lines.map((line) => h('span', { className: 'money' }, line)),
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
      // Units: a budget counts units (reserved ones included), never money.
      unitsWith(budget.usedUnits, '', { 'data-field': 'used' }),
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

/**
 * The company's month: spent so far (in money at the prices recorded, once the usage answer is
 * in), the rate, and where it leads by the window's end (a projection: at today's price).
 */
export function companyView(forecast, usageRows = []) {
  const { company } = forecast;
  const { all } = recordedMoney(usageRows);
  const projected = moneyText(company.projectedUnits);
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
      h('dd', { id: 'company-spent' }, unitsText(company.spentUnits), ' units ', recordedLines(all, 'spent').join(' ')),
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
        projected ? `${projected} at today’s price` : '',
      ),
    ),
  );
}

/**
 * What each client spent this month and in the last 7 days, from the ledger: its units (the
 * forecast) and, once the usage answers over the same spans are in, their money at the prices
 * recorded and the reuse savings where the month's has `unitsSaved` (a gateway without reuse
 * has none: no column).
 */
export function clientsView(forecast, usageRows, lastDaysRows = []) {
  const saved = new Map();
  for (const row of usageRows)
    if (typeof row.unitsSaved === 'number') saved.set(row.clientId, (saved.get(row.clientId) ?? 0) + row.unitsSaved);
  const withSavings = saved.size > 0;
  const money = recordedMoney(usageRows);
  const lastDays = recordedMoney(lastDaysRows);
  const clients = [...forecast.clients].sort(
    (a, b) => b.spentUnits - a.spentUnits || a.clientId.localeCompare(b.clientId),
  );
  if (clients.length === 0) return note('Nothing spent this month.');
  const total = clients.reduce((sum, client) => sum + client.spentUnits, 0);
  const rows = clients.map((client) => {
    const sum = money.byClient.get(client.clientId);
    return h(
      'tr',
      { 'data-client': client.clientId },
      h('th', { scope: 'row' }, client.clientId),
      unitsWith(client.spentUnits, recordedLines(sum, 'spent'), { 'data-field': 'spent' }),
      unitsWith(client.lastDaysUnits, recordedLines(lastDays.byClient.get(client.clientId), 'spent'), {
        'data-field': 'last-days',
      }),
      withSavings
        ? unitsWith(saved.get(client.clientId) ?? 0, recordedLines(sum, 'saved'), { 'data-field': 'saved' })
        : null,
    );
  });
  rows.push(
    h(
      'tr',
      { className: 'total', 'data-client': '' },
      h('th', { scope: 'row' }, 'all clients'),
      unitsWith(total, recordedLines(money.all, 'spent'), { 'data-field': 'spent' }),
      unitsWith(forecast.company.lastDaysUnits, recordedLines(lastDays.all, 'spent'), { 'data-field': 'last-days' }),
      withSavings
        ? unitsWith(
            [...saved.values()].reduce((a, b) => a + b, 0),
            recordedLines(money.all, 'saved'),
          )
        : null,
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

/** The price line under the heading: how money is read, or that no money is shown. */
export function priceNote() {
  if (!display.price) return note('Units only: COST_UNIT_PRICE is not set, so no money is shown.');
  return note(
    'Money spent and saved = each inquiry’s units × the unit price recorded when it was made (COST_UNIT_PRICE ' +
      'then), never today’s; units recorded without a price are shown apart, other currencies beside, not ' +
      `converted. Budgets count units. One unit costs ${moneyText(1)} today: the month’s projection is at that price.`,
  );
}
