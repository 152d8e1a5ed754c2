import jsonpointer from 'jsonpointer';
import type { TrackingConfig } from '../config/tracking-config.js';

/**
 * What one question came to, as vgw_tracking_questions_total labels it: the provider said
 * charged (`yes`) or not (`no`), did not know the trackId (`not_found`), answered a value no
 * list names (`unrecognised`) or none at the pointer (`no_value`), failed (`error`: a status
 * other than 2xx and 404, an unreadable answer, a refused connection) or did not answer in time
 * (`timeout`); `not_asked`: no token could be had, nothing was sent.
 */
export const TRACKING_RESULTS = [
  'yes',
  'no',
  'not_found',
  'unrecognised',
  'no_value',
  'error',
  'timeout',
  'not_asked',
] as const;
export type TrackingResult = (typeof TRACKING_RESULTS)[number];

export interface TrackingAnswer {
  result: TrackingResult;
  /** What the ledger learns: charged or not; undefined: nothing (asked again later). */
  learned?: 'yes' | 'no';
}

/**
 * Reads one answer of the tracking service (docs/api.md §8): only a value listed in `yes` or
 * `no` at the pointer, or a 404 when `notFound` is `no`, teaches anything. Pure: the unit spec
 * covers each case.
 */
export function readAnswer(config: TrackingConfig, status: number, body: string): TrackingAnswer {
  if (status === 404)
    return config.notFound === 'no' ? { result: 'not_found', learned: 'no' } : { result: 'not_found' };
  if (status < 200 || status > 299) return { result: 'error' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { result: 'error' };
  }
  const value = valueAt(parsed, config.charged.pointer);
  if (value === undefined || value === null) return { result: 'no_value' };
  // Own scalars only: an inherited property (`/constructor`) or an object is no status.
  if (!['string', 'number', 'boolean'].includes(typeof value)) return { result: 'unrecognised' };
  if (config.charged.yes.includes(value as string)) return { result: 'yes', learned: 'yes' };
  if (config.charged.no.includes(value as string)) return { result: 'no', learned: 'no' };
  return { result: 'unrecognised' };
}

function valueAt(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  if (typeof document !== 'object' || document === null) return undefined;
  try {
    return jsonpointer.get(document, pointer);
  } catch {
    return undefined;
  }
}
