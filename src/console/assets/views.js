import { recordedMoneyText, timeText } from '/console/format.js';

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

/** `when` in the zone shown (BUDGET_TIMEZONE, or UTC by the toggle), its zone named, the ISO form in datetime. */
export function time(iso, short = false) {
  if (!iso) return '–';
  return h('time', { dateTime: iso }, timeText(iso, !short));
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

export const number = (value) =>
  h('td', { className: 'num' }, typeof value === 'number' ? value.toLocaleString() : '–');

// ---- Ledger entries (NDJSON lines of GET /admin/ledger)

const ENTRY_FIELDS = [
  ['kind', 'kind'],
  ['status', 'status'],
  ['charged', 'charged'],
  ['costUnits', 'spent'],
  ['clientId', 'client'],
  ['operation', 'operation'],
  ['requestHandlingType', 'handling'],
  ['createdAt', 'made'],
  ['completedAt', 'completed'],
  ['upstreamCode', 'upstream'],
  ['requestId', 'requestId'],
];

/** What an entry spent: 0 when not charged (a failed inquiry's units are its price, not a spend). */
export const spentOf = (entry) => (entry.charged === 'no' ? 0 : entry.costUnits);

/** The upstream's code with its message (`15: National code and mobile do not match`); its code 0 (success) said in words, not a bare "0". */
export const upstreamText = (entry) =>
  entry.upstreamCode === undefined
    ? '–'
    : entry.upstreamCode === 0
      ? 'ok (0)'
      : `${entry.upstreamCode}${entry.upstreamMessage ? `: ${entry.upstreamMessage}` : ''}`;

function entryCell(field, value, entry) {
  if (field === 'createdAt' || field === 'completedAt') return h('td', {}, time(value));
  if (field === 'upstreamCode') return h('td', {}, upstreamText(entry));
  if (field === 'costUnits') {
    const spent = spentOf(entry);
    return h(
      'td',
      { className: 'num' },
      `${spent}${recordedMoneyText(spent, entry) ? ` (${recordedMoneyText(spent, entry)})` : ''}${entry.charged === 'no' ? ` of ${entry.costUnits} priced` : ''}`,
    );
  }
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
      h(
        'div',
        {},
        h('dt', {}, 'spent'),
        h(
          'dd',
          { id: 'inquiry-spent' },
          `${spentOf(now)} units${recordedMoneyText(spentOf(now), now) ? `, ${recordedMoneyText(spentOf(now), now)}` : ''}`,
        ),
      ),
      h(
        'div',
        {},
        h('dt', {}, 'upstream'),
        h('dd', { id: 'inquiry-upstream' }, upstreamText(entries.find((e) => e.upstreamCode !== undefined) ?? now)),
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
          ENTRY_FIELDS.map(([field]) => entryCell(field, entry[field], entry)),
        ),
      ),
      `Ledger entries of ${trackId}`,
    ),
  );
}
