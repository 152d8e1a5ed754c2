import { pipeline, type Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { ProblemException } from '../problem/problem.js';

/**
 * The most data rows one list may hold: 32 MiB of trackIds (16 bytes each) while it is checked.
 * Past it, 413 `payload_too_large` (the body is larger than the route takes, as any body limit;
 * nothing in it is wrong): a provider's list is split by period (`from`/`to`).
 */
export const MAX_ROWS = 2_000_000;
/** trackIds sent to PostgreSQL per statement (unnest of one chunk). */
const CHUNK = 5_000;
/**
 * The longest CSV record read (csv-parse `max_record_size`, characters): a trackId row is well
 * under it, and one overlong record (a field without its end) is refused, 400, not held whole.
 */
const MAX_RECORD_CHARS = 1_024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A validated list: trackIds as 16-byte values, CHUNK a buffer, so memory is 16 bytes a row. */
export interface ProviderList {
  rows: number;
  chunks: Buffer[];
}

/**
 * Reads and validates the whole CSV before anything is written: a header row with a `trackId`
 * column and at least one row, every trackId a UUID, at most MAX_ROWS rows; otherwise a
 * problem (400 validation_failed, 413 payload_too_large) and nothing is written.
 */
export async function readList(body: Readable): Promise<ProviderList> {
  const parser = parse({
    columns: (header: string[]) => {
      if (!header.includes('trackId')) throw invalid('The CSV needs a header row with a trackId column.');
      return header;
    },
    skip_empty_lines: true,
    trim: true,
    bom: true,
    max_record_size: MAX_RECORD_CHARS,
  });
  // pipeline, not pipe: a body that errors or closes before its end (the client gone) destroys
  // the parser, so the read below rejects and the one-at-a-time guard is released
  // (reconciliation.integration.spec.ts, "body fails mid-way"). Its error surfaces there.
  pipeline(body, parser, () => undefined);
  const chunks: Buffer[] = [];
  let chunk = Buffer.allocUnsafe(CHUNK * 16);
  let inChunk = 0;
  let rows = 0;
  try {
    for await (const record of parser as AsyncIterable<Record<string, string>>) {
      rows += 1;
      if (rows > MAX_ROWS) {
        throw new ProblemException(
          'payload_too_large',
          `The list holds more than ${MAX_ROWS} rows: send it in parts, each with its period (from, to).`,
        );
      }
      const trackId = record.trackId;
      if (trackId === undefined || !UUID.test(trackId)) throw invalid(`Row ${rows + 1}: trackId is not a UUID.`);
      chunk.write(trackId.replaceAll('-', ''), inChunk * 16, 16, 'hex');
      inChunk += 1;
      if (inChunk === CHUNK) {
        chunks.push(chunk);
        chunk = Buffer.allocUnsafe(CHUNK * 16);
        inChunk = 0;
      }
    }
  } catch (error) {
    if (error instanceof ProblemException) throw error;
    if (!(error instanceof CsvError)) {
      throw invalid('The body could not be read to its end (the upload was interrupted). Nothing was written.');
    }
    // csv-parse's errors name the line and the rule, never a cell's content.
    throw invalid(`The body is not valid CSV: ${(error as { code?: string }).code ?? 'parse error'}.`);
  }
  if (inChunk > 0) chunks.push(chunk.subarray(0, inChunk * 16));
  if (rows === 0) {
    throw invalid(
      'The list has no rows: a header row with a trackId column and at least one trackId are needed. Nothing was written.',
    );
  }
  return { rows, chunks };
}

/** A chunk's trackIds as UUID text, for unnest($1::uuid[]). */
export function trackIdsOf(chunk: Buffer): string[] {
  const ids: string[] = [];
  for (let at = 0; at < chunk.length; at += 16) {
    const hex = chunk.toString('hex', at, at + 16);
    ids.push(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
  }
  return ids;
}

function invalid(detail: string): ProblemException {
  return new ProblemException('validation_failed', detail);
}
