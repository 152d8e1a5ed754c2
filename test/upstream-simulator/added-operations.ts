/**
 * The upstream's other web services: the inquiries an operator adds to the gateway by
 * configuration (docs/api.md, "Operations the operator adds"). The upstream's page shows Shahkar
 * and IBAN only "as usage examples" (docs/upstream-api.md §4.2); "the complete list of web
 * services and what each returns: not shown" (§1). So the simulator answers a POST to any path of
 * that shape as one more inquiry, through the same pipeline as CheckShahkar and IbanInquiry
 * (upstream-simulator.ts): Bearer, the common fields (§2.4, §4.4: trackId once only, 400 on an
 * invalid or zero UUID, X-Track-Id; requestHandlingType), credit, the supplier chain and its
 * charges, latency, faults and events.
 *
 * Choices where the contract is silent:
 * - A path is `/api/v5/` and segments of A-Z a-z 0-9 _ - (the gateway's `upstreamPath`, without
 *   `//`, `..` or a trailing slash); any other path, and any method but POST, stays a 404. With
 *   `addedOperationPaths` the simulator knows those paths only (a misspelt `upstreamPath` then
 *   meets the 404 a real upstream would answer).
 * - Every body field but `trackId` and `requestHandlingType` must be a non-empty string (the
 *   gateway sends every type normalised, as a string), as the built-ins' fields must; absent
 *   (optional) fields are fine. Values are not checked further: their types are the gateway's.
 * - `data` is `{ input, matched, reference }`: `input` the fields exactly as received (so a test
 *   sees what the gateway normalised), `matched` true unless an input is scripted `no-match`,
 *   `reference` 16 hex digits of the SHA-256 of the path and the fields (deterministic).
 * - Scripted outcomes (`inputOutcomes`, the sandbox's test data) match the value of any field.
 */
import { createHash } from 'node:crypto';

/** A path the simulator answers as an added inquiry. */
export const ADDED_OPERATION_PATH = /^\/api\/v5\/[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/;

/** §2.4: accepted in the body of every web service, not an operation's own. */
const COMMON_FIELDS: ReadonlySet<string> = new Set(['trackId', 'requestHandlingType']);

export interface AddedOperationData {
  /** The operation's fields as received. */
  input: Record<string, string>;
  matched: boolean;
  reference: string;
}

/** True when `path` is served as an added inquiry: of the shape above, and listed when a list is given. */
export function isAddedOperationPath(path: string, known: readonly string[] | undefined): boolean {
  return ADDED_OPERATION_PATH.test(path) && (known === undefined || known.includes(path));
}

/** The operation's own fields of a body (the common fields left out). */
function ownFields(body: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(body).filter(([field]) => !COMMON_FIELDS.has(field));
}

/** One error per field that is not a non-empty string (answered 400, code 2, like the built-ins'). */
export function addedOperationFieldErrors(body: Record<string, unknown>): Array<{ field: string; message: string }> {
  return ownFields(body)
    .filter(([, value]) => typeof value !== 'string' || value.length === 0)
    .map(([field]) => ({ field, message: `${field} must be a non-empty string` }));
}

/** The values scripted outcomes are looked up by: every field's. */
export function addedOperationInputs(body: Record<string, unknown>): string[] {
  return ownFields(body).map(([, value]) => String(value));
}

/** The synthetic answer: the fields echoed, a match, and a reference derived from them. */
export function addedOperationAnswer(
  path: string,
  body: Record<string, unknown>,
  noMatch: boolean,
): AddedOperationData {
  const input = Object.fromEntries(ownFields(body)) as Record<string, string>;
  const canonical = JSON.stringify([path, Object.entries(input).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  const reference = createHash('sha256').update(canonical).digest('hex').slice(0, 16);
  return { input, matched: !noMatch, reference };
}
