/** The longest `wait` the gateway honours, in seconds (docs/api.md, "Asynchronous answers"). */
export const MAX_WAIT_SECONDS = 60;

/** What a `Prefer` header asks of an inquiry or a read. */
export interface Preferences {
  respondAsync: boolean;
  /** `wait=<seconds>`, capped at MAX_WAIT_SECONDS; undefined when absent or not a number. */
  waitSeconds?: number;
}

/**
 * RFC 7240 §2: preferences are comma-separated (several `Prefer` headers count as one list),
 * each `name [= value] *( ; parameter )`, names case-insensitive, values optionally quoted.
 * Preferences the gateway does not know, and malformed values, are ignored, as the RFC asks of
 * a server (a preference is never an error); of a preference given twice the first counts
 * (§2). A wait beyond 60 s is cut to 60 (§4.3 lets the server bound it).
 *
 * Hand-written: the one npm parser (parse-prefer-header) has had one release, in 2017; this is
 * the whole grammar the gateway needs, unit-tested (prefer.spec.ts).
 */
export function parsePrefer(header: string | string[] | undefined): Preferences {
  const preferences: Preferences = { respondAsync: false };
  if (header === undefined) return preferences;
  const seen = new Set<string>();
  for (const preference of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [nameAndValue] = preference.split(';');
    const equals = nameAndValue.indexOf('=');
    const name = (equals < 0 ? nameAndValue : nameAndValue.slice(0, equals)).trim().toLowerCase();
    const value =
      equals < 0
        ? ''
        : nameAndValue
            .slice(equals + 1)
            .trim()
            .replace(/^"(.*)"$/, '$1');
    if (name === '' || seen.has(name)) continue;
    seen.add(name);
    if (name === 'respond-async') preferences.respondAsync = true;
    else if (name === 'wait' && /^\d{1,9}$/.test(value))
      preferences.waitSeconds = Math.min(Number(value), MAX_WAIT_SECONDS);
  }
  return preferences;
}
