// Parked ledger entries (GET /admin/ledger/parked) and the operator's decision on each: re-drive
// it into the ledger or discard it, with a reason (POST /admin/ledger/parked/{id}/redrive|discard).
import { ApiError, getJson, postJson } from '/console/api.js';
import { mark } from '/console/now.js';
import { h, note, table, time } from '/console/views.js';

const $ = (id) => document.getElementById(id);
const DAYS = 30;

/** What was decided, or the form that decides it (when this build serves the actions). */
function decision(entry, canAct, reload) {
  if (entry.handled) {
    const { action, by, reason, at, written } = entry.handled;
    const what =
      action === 'redriven' ? (written === false ? 're-driven (already in the ledger)' : 're-driven') : 'discarded';
    return h('td', {}, `${what} by ${by}, `, time(at, true), h('br'), h('q', {}, reason));
  }
  if (!canAct) return h('td', {}, '–');
  const reason = h('input', {
    type: 'text',
    required: true,
    maxLength: 500,
    'aria-label': `Reason for entry ${entry.trackId ?? entry.id}`,
    placeholder: 'why (required)',
  });
  const message = h('span', { role: 'status' });
  const act = async (action) => {
    if (!reason.reportValidity()) return;
    try {
      await postJson(`/admin/ledger/parked/${entry.id}/${action}`, { reason: reason.value });
      await reload();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      message.replaceChildren(h('span', { className: 'error' }, error.message));
    }
  };
  const form = h(
    'form',
    { className: 'parked-decision', 'data-id': entry.id },
    reason,
    h('button', { type: 'submit', value: 'redrive' }, 'Re-drive'),
    h('button', { type: 'button', value: 'discard' }, 'Discard'),
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void act('redrive');
  });
  form.querySelector('button[value=discard]').addEventListener('click', () => void act('discard'));
  return h('td', {}, form);
}

/** The last 30 days' parked entries; `failed` shows a call's failure where the list would be. */
export async function loadParked(routes, failed) {
  if (!routes.parked)
    return $('parked-result').replaceChildren(
      note('Not available in this build of the gateway (GET /admin/ledger/parked is not served).'),
    );
  const reload = () => loadParked(routes, failed);
  try {
    const now = Date.now();
    const range = { from: new Date(now - DAYS * 86_400_000).toISOString(), to: new Date(now + 60_000).toISOString() };
    const answer = await getJson(`/admin/ledger/parked?${new URLSearchParams(range)}`);
    const open = answer.parked.filter((entry) => !entry.handled).length;
    const count = `${open}${answer.truncated ? '+' : ''}`;
    mark('now-parked', open ? `${count} undecided: see "Parked ledger entries"` : '0 undecided', open ? 'bad' : 'good');
    $('parked-result').replaceChildren(
      answer.parked.length === 0
        ? note(`No entry was refused by PostgreSQL in the last ${DAYS} days.`, 'good')
        : table(
            ['parked', 'trackId', 'kind', 'SQLSTATE', 'database message', 'decision'],
            answer.parked.map((entry) =>
              h(
                'tr',
                { 'data-id': entry.id },
                h('td', {}, time(entry.parkedAt)),
                h('td', {}, h('code', {}, entry.trackId ?? '–')),
                h('td', {}, entry.kind ?? '–'),
                h('td', {}, entry.code),
                h('td', {}, entry.message),
                decision(entry, routes.parkedActions, reload),
              ),
            ),
            'Parked ledger entries',
          ),
    );
  } catch (error) {
    failed('parked-result', error);
  }
}
