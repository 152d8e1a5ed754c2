import { ProblemException } from '../problem/problem.js';
import { REQUEST_HANDLING_TYPES } from '../upstream/inquiry-operation.js';
import { OPERATION_NAME } from '../inquiry/catalog/operation.js';
import type { Charged, EntryStatus } from './ledger-entry.js';
import { ledgerRange } from './ledger-dates.js';
import { MAX_LIST_ROWS, decodeCursor, type InquiryFilter, type ListCursor } from './inquiry-list.js';

/** The query string as Fastify hands it: a repeated parameter arrives as an array. */
export type AdminQuery = Record<string, string | string[] | undefined>;

export const STATUSES: readonly EntryStatus[] = ['succeeded', 'failed', 'unknown'];
const CHARGED: readonly Charged[] = ['yes', 'no', 'possibly'];
export const DEFAULT_LIST_ROWS = 50;

/** 400 validation_failed naming the parameter (docs/api.md §3). */
export function invalidParameter(field: string, message: string): ProblemException {
  return new ProblemException('validation_failed', `${field} ${message}.`, { errors: [{ field, message }] });
}

/** One value of a parameter: absent, or a single string (a repeated one is refused, naming it). */
export function single(query: AdminQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalidParameter(name, 'must be given once');
  return value;
}

function oneOf<T extends string>(query: AdminQuery, name: string, allowed: readonly T[]): T | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) throw invalidParameter(name, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

/**
 * The list's filter (`GET /admin/inquiries`, and the export's `latest=true`): from and to as
 * every administration route reads them, then client, operation, handling, status, charged,
 * reused; each bad value a 400 naming its parameter.
 */
export function inquiryFilterOf(query: AdminQuery): InquiryFilter {
  const filter: InquiryFilter = ledgerRange(single(query, 'from'), single(query, 'to'));
  const clientId = single(query, 'clientId');
  if (clientId !== undefined) {
    if (!/^[\x21-\x7e]{1,256}$/.test(clientId))
      throw invalidParameter('clientId', 'must be 1-256 printable ASCII characters');
    filter.clientId = clientId;
  }
  // Any operation's name, in the catalog or not: the ledger keeps operations a catalog has dropped.
  const operation = single(query, 'operation');
  if (operation !== undefined) {
    if (!OPERATION_NAME.test(operation)) throw invalidParameter('operation', 'must be an operation name');
    filter.operation = operation;
  }
  const handling = oneOf(query, 'handling', REQUEST_HANDLING_TYPES);
  if (handling) filter.handling = handling;
  const status = oneOf(query, 'status', STATUSES);
  if (status) filter.status = status;
  const charged = oneOf(query, 'charged', CHARGED);
  if (charged) filter.charged = charged;
  const reused = oneOf(query, 'reused', ['true', 'false'] as const);
  if (reused) filter.reused = reused === 'true';
  return filter;
}

/** `limit`: 1 to MAX_LIST_ROWS rows, DEFAULT_LIST_ROWS when absent. */
export function listLimitOf(query: AdminQuery): number {
  const raw = single(query, 'limit');
  if (raw === undefined) return DEFAULT_LIST_ROWS;
  const limit = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIST_ROWS))
    throw invalidParameter('limit', `must be a whole number from 1 to ${MAX_LIST_ROWS}`);
  return limit;
}

/** `after`: a cursor a previous page returned as `next`. */
export function listCursorOf(query: AdminQuery): ListCursor | undefined {
  const raw = single(query, 'after');
  if (raw === undefined) return undefined;
  const cursor = raw.length <= 200 ? decodeCursor(raw) : undefined;
  if (!cursor) throw invalidParameter('after', 'must be the `next` cursor of a previous page');
  return cursor;
}
