// Reconciliation on the page (docs/operations.md, "Reconciling a month"): the provider's CSV goes
// first as a dry run (nothing written) and its report is shown as tables; Confirm sends the same
// file with the dry run's digest, so the gateway applies exactly that report or, when the ledger
// changed meanwhile, nothing (409 `reconciliation_changed`): then the new report is shown to confirm.
// Who reconciled, exported or retried a delivery is read from GET /admin/operator-actions.
import { ApiError, getJson, reconcile } from '/console/api.js';
import { amountText, grouped } from '/console/format.js';
import { h, note, table, time } from '/console/views.js';

const $ = (id) => document.getElementById(id);
const show = (...content) => $('reconcile-result').replaceChildren(...content);
const LIST_LIMIT = 50;

const GROUPS = [
  ['Charged and recorded', ['chargedAndRecorded']],
  ['Charged but not in the ledger', ['chargedNotInLedger', 'parked']],
  ['Unknowns it resolves (appended when you confirm)', ['resolved', 'resolvedNotCharged']],
  ['Corrections (appended when you confirm)', ['correctedToCharged', 'correctedToNotCharged']],
  ['Disagreements (nothing appended)', ['recordedNotCharged', 'chargedButRecordedNotCharged']],
];
const FINDINGS = {
  chargedAndRecorded: 'charged and recorded',
  chargedNotInLedger: 'charged but never sent by this gateway (credentials used elsewhere)',
  parked: 'charged, its entry parked (GET /admin/ledger/parked)',
  recordedNotCharged: 'recorded as charged, not on the list',
  chargedButRecordedNotCharged: 'on the list, recorded as not charged',
  resolved: 'unknown entries resolved as charged',
  resolvedNotCharged: 'unknown entries of the period absent from the list: resolved as not charged',
  correctedToCharged: 'resolved earlier as not charged: corrected to charged',
  correctedToNotCharged: 'resolved earlier as charged, absent from the list: corrected to not charged',
};

/** The file and digest of the dry run on screen: what Confirm applies. */
let pending = null;

const moneyOf = (list) =>
  list.money?.length ? list.money.map((m) => amountText(m.amount, m.currency)).join(' + ') : '–';

function findingRow(name, list) {
  const bad = name === 'chargedNotInLedger' && list.count > 0;
  return h(
    'tr',
    { 'data-finding': name, className: bad ? 'bad' : undefined },
    h('th', { scope: 'row' }, FINDINGS[name] ?? name),
    h('td', { className: 'number' }, grouped(String(list.count))),
    h('td', { className: 'number' }, list.units === undefined ? '–' : grouped(String(list.units))),
    h('td', { className: 'number' }, moneyOf(list)),
  );
}

function trackIdsOf(name, list) {
  if (list.count === 0) return null;
  return h(
    'details',
    { open: name === 'chargedNotInLedger' },
    h('summary', {}, `${FINDINGS[name] ?? name}: ${list.count}${list.truncated ? ' (first 1000 in the answer)' : ''}`),
    h(
      'ul',
      {},
      list.trackIds.slice(0, LIST_LIMIT).map((trackId) => h('li', {}, h('code', {}, trackId))),
    ),
    list.trackIds.length > LIST_LIMIT ? note(`… and ${list.trackIds.length - LIST_LIMIT} more in the answer.`) : null,
  );
}

/** The report as tables, one per kind of finding; `applied` says whether it is a dry run's. */
export function reportView(report, receivedAt, applied) {
  const period = report.period ? `${report.period.from} to ${report.period.to} (UTC, end exclusive)` : 'none';
  return h(
    'div',
    { id: applied ? 'reconcile-applied' : 'reconcile-report' },
    h(
      'p',
      {},
      applied ? 'Applied at ' : 'Dry run at ',
      time(receivedAt),
      `: ${grouped(String(report.rows))} rows; period ${period}.`,
      applied ? '' : ' Nothing is written until you confirm.',
    ),
    GROUPS.map(([title, names]) =>
      h(
        'div',
        { className: 'finding-group' },
        h('h3', {}, title),
        table(
          ['finding', 'inquiries', 'units', 'money (as recorded)'],
          names.map((name) => findingRow(name, report[name] ?? { count: 0, trackIds: [] })),
          title,
        ),
        names.map((name) => trackIdsOf(name, report[name] ?? { count: 0, trackIds: [] })),
      ),
    ),
  );
}

/** A CSV refused: its errors beside the form, as the route found them (row and column). */
function refused(error, failed) {
  if (!(error instanceof ApiError) || error.status !== 400) return failed('reconcile-result', error);
  show(
    h(
      'div',
      { id: 'reconcile-errors', role: 'alert' },
      note(error.message, 'error'),
      error.errors.length
        ? h(
            'ul',
            {},
            error.errors.map((e) => h('li', {}, `${e.field}: ${e.message}`)),
          )
        : null,
    ),
  );
}

export async function dryRun(file, failed) {
  pending = null;
  show(note(`Checking ${file.name} against the ledger (a dry run: nothing is written)…`));
  try {
    const report = await reconcile(file);
    pending = { file, digest: report.digest };
    const confirm = h('button', { type: 'button', id: 'reconcile-confirm' }, 'Confirm: apply exactly this');
    const cancel = h('button', { type: 'button', id: 'reconcile-cancel' }, 'Cancel');
    confirm.addEventListener('click', () => void apply(failed));
    cancel.addEventListener('click', () => {
      pending = null;
      show(note('Cancelled: nothing was applied.'));
    });
    show(reportView(report, new Date().toISOString(), false), h('p', { className: 'actions' }, confirm, ' ', cancel));
  } catch (error) {
    refused(error, failed);
  }
}

async function apply(failed) {
  if (!pending) return;
  const { file, digest } = pending;
  pending = null;
  show(note('Applying…'));
  try {
    show(reportView(await reconcile(file, { digest }), new Date().toISOString(), true));
    void loadActions(failed);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'reconciliation_changed') return refused(error, failed);
    await dryRun(file, failed);
    $('reconcile-result').prepend(
      note(
        'The ledger changed since that dry run, so nothing was applied. This is the new report: confirm again.',
        'error',
      ),
    );
  }
}

const ACTIONS = { reconciliation: 'reconciliation', export: 'export', delivery_retry: 'webhook delivery retried' };

function summaryText(action) {
  return Object.entries(action.summary ?? {})
    .map(([name, value]) => `${name} ${value && typeof value === 'object' ? Object.values(value).join('–') : value}`)
    .join(', ');
}

/** Who did what, newest first. */
export async function loadActions(failed) {
  try {
    const { actions } = await getJson('/admin/operator-actions?limit=20');
    $('actions-result').replaceChildren(
      actions.length === 0
        ? note('Nobody has reconciled, exported or retried a delivery yet.')
        : table(
            ['when', 'who', 'what', 'details'],
            actions.map((a) =>
              h(
                'tr',
                { 'data-action': a.action },
                h('td', {}, time(a.at)),
                h('td', {}, a.kind === 'operator' ? `${a.name ?? a.id} (signed in)` : `${a.id} (API key)`),
                h('td', {}, ACTIONS[a.action] ?? a.action),
                h('td', {}, summaryText(a)),
              ),
            ),
            'Who did what',
          ),
    );
  } catch (error) {
    failed('actions-result', error);
  }
}

/** Shows the form only to who may reconcile (the route would answer 403 anyway). */
export function allowReconciliation(scopes) {
  const allowed = scopes.includes('ledger:reconcile');
  $('reconcile-form').hidden = !allowed;
  $('reconcile-denied').hidden = allowed;
}
