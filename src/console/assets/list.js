// The list finance works from (GET /admin/inquiries): a period and filters, newest first, paged
// by the cursor the gateway returns; each row opens the inquiry; the same filter downloads as CSV
// or NDJSON through GET /admin/ledger?latest=true, which yields exactly the rows paged here.
import { download, getJson } from '/console/api.js';
import { addDays, amountText, dayOf, display, unitsText, zone } from '/console/format.js';
import { h, note, table, time, upstreamText } from '/console/views.js';

const $ = (id) => document.getElementById(id);
const FILTERS = ['clientId', 'operation', 'handling', 'status', 'charged', 'reused'];

/** A civil date's start in the zone shown, as a timestamp with its offset (`2026-03-21T00:00:00+03:30`). */
export function startOf(day) {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: zone(), timeZoneName: 'longOffset' })
    .formatToParts(new Date(`${day}T12:00:00Z`))
    .find((part) => part.type === 'timeZoneName').value;
  const offset = name === 'GMT' ? '+00:00' : name.slice(3);
  return `${day}T00:00:00${offset}`;
}

let state = { query: null, cursors: [], onOpen: () => {}, onError: () => {} };

/** The query of the form: the period (the `to` day included) and the filters set. */
function formQuery() {
  const query = { from: startOf($('list-from').value), to: startOf(addDays($('list-to').value, 1)) };
  for (const name of FILTERS) {
    const value = $(`list-${name}`).value.trim();
    if (value) query[name] = value;
  }
  return query;
}

function row(inquiry) {
  const open = h(
    'button',
    { type: 'button', className: 'link', 'aria-label': `Open inquiry ${inquiry.trackId}` },
    inquiry.trackId.slice(0, 8),
  );
  open.addEventListener('click', () => state.onOpen(inquiry.trackId, dayOf(inquiry.createdAt)));
  // At the row's own recorded price, in its own currency (GET /admin/inquiries); none recorded: said so.
  const money =
    inquiry.spentAmount !== undefined
      ? amountText(inquiry.spentAmount, inquiry.currency)
      : display.price
        ? 'no price recorded'
        : '';
  const cells = [
    h('td', {}, open),
    h('td', { className: 'when' }, time(inquiry.createdAt)),
    h('td', {}, inquiry.clientId),
    h('td', {}, `${inquiry.operation} ${inquiry.requestHandlingType}`),
    h(
      'td',
      { className: inquiry.status === 'succeeded' ? 'good' : inquiry.status === 'failed' ? 'bad' : 'warn' },
      inquiry.status,
    ),
    h('td', {}, inquiry.charged),
    h(
      'td',
      { className: 'num', 'data-field': 'spent' },
      `${unitsText(inquiry.spentUnits)} ${inquiry.spentUnits === 1 ? 'unit' : 'units'}`,
      money ? h('span', { className: 'money' }, money) : null,
    ),
    h('td', {}, upstreamText(inquiry)),
    askedCell(inquiry),
  ];
  // Each cell names its column: on a phone the rows are cards (reports.css), the header hidden.
  columns().forEach((column, i) => cells[i].setAttribute('data-label', column));
  return h('tr', { 'data-track-id': inquiry.trackId, 'data-status': inquiry.status }, ...cells);
}

/** What each tracking result means to finance (docs/api.md §8). */
const ANSWERS = {
  yes: 'charged',
  no: 'not charged',
  not_found: 'not found',
  unrecognised: 'an answer no list names',
  no_value: 'no value',
  error: 'failed',
  timeout: 'no answer in time',
  not_asked: 'not sent (no token)',
};

/** When the provider's tracking service was last asked about an unknown, and what it said. */
function askedCell(inquiry) {
  const asked = inquiry.tracking;
  if (!asked) return h('td', { 'data-field': 'asked' }, inquiry.status === 'unknown' ? 'not yet' : '–');
  const times = asked.questions === 1 ? 'once' : `${asked.questions} times`;
  return h(
    'td',
    { 'data-field': 'asked' },
    time(asked.lastAskedAt, true),
    h('br'),
    `${ANSWERS[asked.lastAnswer] ?? asked.lastAnswer} (${times})`,
  );
}

/** The list's columns; spent is in units, with its money below when a price is known. */
const columns = () => [
  'inquiry',
  'made',
  'client',
  'operation',
  'status',
  'charged',
  display.price ? 'spent (units, money)' : 'spent (units)',
  'upstream',
  'provider last asked',
];

function render(answer) {
  const page = state.cursors.length;
  const previous = h('button', { type: 'button', id: 'list-previous', disabled: page === 0 }, 'Previous page');
  const next = h('button', { type: 'button', id: 'list-next', disabled: !answer.next }, 'Next page');
  previous.addEventListener('click', () => void show(state.cursors.slice(0, -1)));
  next.addEventListener('click', () => void show([...state.cursors, answer.next]));
  const downloads = ['csv', 'ndjson'].map((format) => {
    const button = h('button', { type: 'button', id: `list-download-${format}` }, `Download ${format.toUpperCase()}`);
    button.addEventListener('click', () => void save(format));
    return button;
  });
  $('list-result').replaceChildren(
    h(
      'p',
      { id: 'list-summary', className: 'note' },
      `Page ${page + 1}: ${answer.inquiries.length} inquiries, newest first; times in ${zone()}.`,
    ),
    answer.inquiries.length ? table(columns(), answer.inquiries.map(row), 'Inquiries') : note('No inquiry matches.'),
    h('div', { className: 'pager' }, previous, next, ...downloads),
  );
}

/** Shows the page after the last of `cursors` (none: the first page). */
async function show(cursors) {
  try {
    const after = cursors[cursors.length - 1];
    const answer = await getJson(
      `/admin/inquiries?${new URLSearchParams({ ...state.query, limit: $('list-limit').value, ...(after ? { after } : {}) })}`,
    );
    state.cursors = cursors;
    render(answer);
  } catch (error) {
    state.onError('list-result', error);
  }
}

/** The current filter as a file (the export behind it, one row per inquiry, streamed). */
async function save(format) {
  const accept = format === 'csv' ? 'text/csv' : 'application/x-ndjson';
  const name = `inquiries-${$('list-from').value}-to-${$('list-to').value}.${format}`;
  try {
    await download(`/admin/ledger?${new URLSearchParams({ ...state.query, latest: 'true' })}`, accept, name);
  } catch (error) {
    state.onError('list-result', error);
  }
}

/** Applies a filter (from the form, or a quick filter that fills the form first). */
export function applyList(preset) {
  if (preset) {
    for (const name of FILTERS) $(`list-${name}`).value = preset[name] ?? '';
    if (preset.from) $('list-from').value = preset.from;
    if (preset.to) $('list-to').value = preset.to;
  }
  state.query = formQuery();
  return show([]);
}

/** The operation filter's choices: the catalog's operations (GET /admin/status `operations`), the choice kept. */
export function setOperations(names) {
  const select = $('list-operation');
  if (
    [...select.options]
      .slice(1)
      .map((option) => option.value)
      .join('\n') === names.join('\n')
  )
    return;
  const chosen = select.value;
  select.replaceChildren(h('option', { value: '' }, 'any'), ...names.map((name) => h('option', { value: name }, name)));
  select.value = names.includes(chosen) ? chosen : '';
}

/** Where a row opens and errors show; the default period: the 30 days up to `today`. */
export function setUpList({ onOpen, onError, today }) {
  state = { ...state, onOpen, onError };
  $('list-from').value = addDays(today, -29);
  $('list-to').value = today;
}
