// Rendering of the admin routes' answers (docs/api.md §4 and §7). Built with DOM calls and textContent
// only: nothing an answer holds is ever parsed as HTML.

/** An element with attributes (`class`, `data-*`, properties such as `hidden`) and children. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name in element && !name.startsWith('aria-') && !name.startsWith('data-')) element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function note(text, kind = 'note') {
  return h('p', { className: kind }, text);
}

const FULL = { dateStyle: 'medium', timeStyle: 'medium' };
/** A budget's reset: within weeks, so no year and no seconds (the table stays narrow). */
const SHORT = { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };

/** `when` as the operator's local time, with the ISO form in a tooltip-free <time>. */
export function time(iso, short = false) {
  if (!iso) return '–';
  const date = new Date(iso);
  return h('time', { dateTime: iso }, date.toLocaleString(undefined, short ? SHORT : FULL));
}

export function table(headings, rows, caption) {
  return h(
    'div',
    // Scrolls sideways on a narrow screen: focusable, so a keyboard can scroll it too.
    { className: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption ?? 'table' },
    h(
      'table',
      {},
      caption ? h('caption', { className: 'visually-hidden' }, caption) : null,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headings.map((text) => h('th', { scope: 'col' }, text)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

const number = (value) => h('td', { className: 'num' }, typeof value === 'number' ? value.toLocaleString() : '–');

// ---- Budgets: GET /admin/budgets → { budgets: [{ clientId, budgets: [BudgetView] }] }

export function budgetsView(answer) {
  const clients = Array.isArray(answer?.budgets) ? answer.budgets : [];
  const rows = [];
  for (const client of clients) {
    for (const budget of client.budgets ?? []) {
      const used = budget.spentUnits + budget.reservedUnits;
      const label = `${client.clientId === '*' ? 'all clients' : client.clientId}, ${budget.window}: ${used} of ${budget.limitUnits} units`;
      rows.push(
        h(
          'tr',
          { 'data-client': client.clientId, 'data-window': budget.window },
          h('th', { scope: 'row' }, client.clientId === '*' ? 'all clients (*)' : client.clientId),
          h('td', {}, budget.window),
          h(
            'td',
            {},
            h('meter', {
              min: 0,
              max: budget.limitUnits,
              value: Math.min(used, budget.limitUnits),
              low: budget.limitUnits * 0.8,
              high: budget.limitUnits * 0.99,
              optimum: 0,
              'aria-label': label,
              title: label,
            }),
          ),
          h(
            'td',
            { className: 'num', 'data-field': 'spent' },
            `${budget.spentUnits.toLocaleString()} / ${budget.limitUnits.toLocaleString()}`,
          ),
          number(budget.reservedUnits),
          h('td', { className: 'when' }, time(budget.resetsAt, true)),
        ),
      );
    }
  }
  if (rows.length === 0) return note('No budget is configured (BUDGETS).');
  return table(['client', 'window', 'used', 'spent / limit', 'reserved', 'resets'], rows, 'Budgets');
}

// ---- Usage: GET /admin/usage?period=day → per client and day: inquiries, succeeded, failed,
// unknown, units spent. The names a row may use for its day and its units are read leniently
// (see docs/operations.md, "The console"), so a renamed field shows as a gap, not a crash.

export function usageRows(answer) {
  const list = Array.isArray(answer)
    ? answer
    : (answer?.usage ?? answer?.rows ?? answer?.items ?? answer?.clients ?? answer?.periods ?? []);
  const rows = [];
  for (const row of Array.isArray(list) ? list : []) {
    if (Array.isArray(row.periods)) {
      for (const period of row.periods) rows.push(normalise({ clientId: row.clientId, ...period }));
    } else rows.push(normalise(row));
  }
  return rows.filter((row) => row.clientId && row.day);
}

function normalise(row) {
  const period = row.period ?? row.periodStart ?? row.date ?? row.day ?? row.from ?? row.start;
  const units = row.unitsSpent ?? row.units ?? row.costUnits ?? row.spentUnits ?? 0;
  return {
    clientId: row.clientId,
    day: typeof period === 'string' ? period.slice(0, 10) : undefined,
    inquiries: Number(row.inquiries ?? 0),
    units: Number(units),
    unknown: Number(row.unknown ?? 0),
  };
}

// ---- Ledger entries (NDJSON lines of GET /admin/ledger)

const ENTRY_FIELDS = [
  ['kind', 'kind'],
  ['status', 'status'],
  ['charged', 'charged'],
  ['costUnits', 'units'],
  ['clientId', 'client'],
  ['operation', 'operation'],
  ['requestHandlingType', 'handling'],
  ['createdAt', 'made'],
  ['completedAt', 'completed'],
  ['upstreamCode', 'upstream code'],
  ['requestId', 'requestId'],
];

function entryCell(field, value) {
  if (field === 'createdAt' || field === 'completedAt') return h('td', {}, time(value));
  if (field === 'costUnits' || field === 'upstreamCode') return number(value);
  if (field === 'requestId') return h('td', {}, value ? h('code', {}, value) : '–');
  return h('td', {}, value ?? '–');
}

export function entriesView(trackId, entries) {
  if (entries.length === 0) return note(`No ledger entry for ${trackId} in that period.`);
  const now = entries[entries.length - 1];
  const subject = entries.find((entry) => entry.subjectSha256)?.subjectSha256;
  return h(
    'div',
    {},
    h(
      'dl',
      { className: 'facts' },
      h('div', {}, h('dt', {}, 'trackId'), h('dd', {}, h('code', {}, trackId))),
      h(
        'div',
        {},
        h('dt', {}, 'status now'),
        h('dd', { id: 'inquiry-status' }, `${now.status} (charged: ${now.charged})`),
      ),
      // Only a prefix of the end user's hash: enough to compare two inquiries, nothing personal.
      h('div', {}, h('dt', {}, 'end user (SHA-256 prefix)'), h('dd', {}, subject ? `${subject.slice(0, 12)}…` : '–')),
    ),
    h('p', { className: 'note' }, 'Find its log lines by requestId (every log line of a request carries it).'),
    table(
      ENTRY_FIELDS.map(([, heading]) => heading),
      entries.map((entry) =>
        h(
          'tr',
          {},
          ENTRY_FIELDS.map(([field]) => entryCell(field, entry[field])),
        ),
      ),
      `Ledger entries of ${trackId}`,
    ),
  );
}

/**
 * `counts`: unknown inquiries per client by their latest fact (from /admin/usage, so a resolved one
 * is no longer counted); `entries`: the ledger's `unknown` entries as recorded (an entry stays
 * when a later reconciliation resolves it: the ledger appends, never rewrites).
 */
export function unknownsView(counts, entries, total) {
  const awaiting = [...counts].filter(([, count]) => count > 0);
  const sum = awaiting.reduce((all, [, count]) => all + count, 0);
  return h(
    'div',
    {},
    h(
      'p',
      { id: 'unknowns-count', className: sum > 0 ? 'warn' : 'good' },
      `${sum} awaiting reconciliation in the last 30 days.`,
    ),
    awaiting.length
      ? table(
          ['client', 'unknown'],
          awaiting.map(([client, count]) => h('tr', {}, h('th', { scope: 'row' }, client), number(count))),
          'Unknown per client',
        )
      : null,
    entries.length
      ? h(
          'details',
          {},
          h(
            'summary',
            {},
            `Unknown entries as recorded: ${total}${total > entries.length ? ` (first ${entries.length})` : ''}`,
          ),
          table(
            ['trackId', 'client', 'units', 'made'],
            entries.map((entry) =>
              h(
                'tr',
                {},
                h('td', {}, h('code', {}, entry.trackId)),
                h('td', {}, entry.clientId),
                number(entry.costUnits),
                h('td', {}, time(entry.createdAt)),
              ),
            ),
            'Unknown entries',
          ),
        )
      : null,
  );
}

// ---- Reconciliation report (POST /admin/reconciliations): `rows`, and per finding a list
// `{ count, trackIds, truncated }`; anything else the answer holds is shown by its name.

const LIST_LIMIT = 50;
const FINDINGS = {
  chargedAndRecorded: 'charged and recorded',
  chargedNotInLedger: 'charged but never sent by this gateway (credentials used elsewhere)',
  recordedNotCharged: 'recorded as charged, not on the list',
  chargedButRecordedNotCharged: 'on the list, recorded as not charged',
  resolved: 'unknown entries resolved (appended to the ledger)',
  resolvedNotCharged: 'unknown entries of the period absent from the list: resolved as not charged',
};

const words = (name) => FINDINGS[name] ?? name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
const isList = (value) =>
  value && typeof value === 'object' && typeof value.count === 'number' && Array.isArray(value.trackIds);

export function reportView(report, receivedAt) {
  const rows = [];
  const lists = [];
  for (const [name, value] of Object.entries(report ?? {})) {
    if (isList(value)) {
      rows.push(
        h(
          'tr',
          { 'data-finding': name, className: name === 'chargedNotInLedger' && value.count > 0 ? 'bad' : undefined },
          h('th', { scope: 'row' }, words(name)),
          number(value.count),
        ),
      );
      if (value.count > 0) lists.push([name, value]);
    } else if (typeof value === 'number')
      rows.push(h('tr', { 'data-finding': name }, h('th', { scope: 'row' }, words(name)), number(value)));
    else if (value && typeof value === 'object')
      rows.push(
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, words(name)),
          h(
            'td',
            {},
            Object.entries(value)
              .map(([k, v]) => `${k} ${v}`)
              .join(', '),
          ),
        ),
      );
  }
  return h(
    'div',
    { id: 'reconcile-report' },
    h('p', {}, 'Report of the reconciliation sent at ', time(receivedAt), ':'),
    table(['finding', 'count'], rows, 'Reconciliation findings'),
    lists.map(([name, list]) =>
      h(
        'details',
        { open: name === 'chargedNotInLedger' },
        h(
          'summary',
          {},
          `${words(name)}: ${list.count}${list.truncated ? ` (first ${list.trackIds.length} listed)` : ''}`,
        ),
        h(
          'ul',
          {},
          list.trackIds.slice(0, LIST_LIMIT).map((trackId) => h('li', {}, h('code', {}, trackId))),
        ),
        list.trackIds.length > LIST_LIMIT
          ? note(`… and ${list.trackIds.length - LIST_LIMIT} more in the answer.`)
          : null,
      ),
    ),
  );
}
