import { ProblemException } from '../problem/problem.js';
import { refusalOf, screen } from './entry-writer.js';
import type { SqlQueries } from './ledger-database.js';
import type { QueuedEntry } from './ledger-entry.js';
import { ensurePartitions } from './ledger-schema.js';
import type { LedgerStore } from './ledger.store.js';

export type ParkedAction = 'redriven' | 'discarded';

/** What an operator did with a parked entry, as the answer and GET /admin/ledger/parked show it. */
export interface ParkedActionFact {
  id: string;
  action: ParkedAction;
  by: string;
  reason: string;
  at: string;
  /** Re-driven: whether the ledger wrote it anew (false: an entry with its key was there already). */
  written?: boolean;
  /** The same decision sent again (same action, caller and reason): its first answer, nothing done. */
  replayed: boolean;
}

export interface ParkedActor {
  clientId: string;
  reason: string;
  requestId: string;
}

/** The longest reason kept: a sentence or two for the next person reading the ledger's history. */
export const MAX_REASON = 500;

/**
 * The reason as given, trimmed: required, at most MAX_REASON characters, no control character or
 * lone surrogate (it is shown in the console and exported). A 400 naming the field otherwise.
 */
export function reasonOf(body: unknown): string {
  const fields = body !== null && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : null;
  const extra = fields?.filter((field) => field !== 'reason') ?? [];
  if (fields === null || extra.length > 0)
    throw ProblemException.validation(
      fields === null
        ? [{ field: 'reason', message: 'the body must be a JSON object {"reason": "…"}' }]
        : extra.map((field) => ({ field, message: 'is not a known field' })),
    );
  const reason = (body as { reason?: unknown }).reason;
  const text = typeof reason === 'string' ? reason.trim() : '';
  const problem =
    typeof reason !== 'string' || text === ''
      ? 'is required: say why, for whoever reads the ledger next'
      : // eslint-disable-next-line no-control-regex
        /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)
        ? 'may not hold control characters'
        : [...text].length > MAX_REASON
          ? `must be at most ${MAX_REASON} characters`
          : null;
  if (problem) throw ProblemException.validation([{ field: 'reason', message: problem }]);
  return text;
}

interface ActionRow {
  action: ParkedAction;
  client_id: string;
  reason: string;
  written: boolean | null;
  acted_at: Date;
}

/** Thrown inside the transaction to undo it when another decision was there first. */
class DecidedAlready extends Error {
  constructor(readonly row: ActionRow) {
    super('decided already');
  }
}

const notFound = () => new ProblemException('not_found', 'No parked ledger entry has this id.');

/**
 * Operators' decisions on parked entries (table ledger_parked_actions, migration 13): re-drive
 * one into the ledger, or discard it, each an appended fact saying who and why. The first
 * decision on an entry wins, across replicas (the row's key): the same one sent again is
 * replayed, any other is 409 `parked_entry_handled`. A re-drive writes the entry and its fact in
 * one transaction: a database that refuses the entry again (422 `parked_entry_refused`) leaves
 * neither, and a lost race leaves no entry behind.
 */
export class ParkedActions {
  constructor(private readonly store: LedgerStore) {}

  async act(id: string, action: ParkedAction, actor: ParkedActor): Promise<ParkedActionFact> {
    await this.store.ready();
    const db = this.store.db;
    const parked = await db.query<{ entry: Uint8Array }>('SELECT entry FROM ledger_parked WHERE entry_sha256 = $1', [
      id,
    ]);
    if (parked.length === 0) throw notFound();
    // Decided already: replayed or 409, before the entry is tried again (a refusal is not the answer).
    const decided = await this.decision(db, id);
    if (decided) return answerTo(id, action, actor, decided);
    const entry = action === 'redriven' ? await this.prepared(parked[0].entry) : undefined;
    try {
      return await db.transaction(async (tx) => {
        const written = entry ? (await this.store.insertWithin(tx, [entry])) > 0 : null;
        const rows = await tx.query<{ acted_at: Date }>(
          `INSERT INTO ledger_parked_actions (entry_sha256, action, client_id, reason, request_id, written)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (entry_sha256) DO NOTHING RETURNING acted_at`,
          [id, action, actor.clientId, actor.reason, actor.requestId, written],
        );
        if (rows.length === 0) throw new DecidedAlready((await this.decision(tx, id))!);
        return factOf(id, { action, client_id: actor.clientId, reason: actor.reason, written, ...rows[0] }, false);
      });
    } catch (error) {
      if (error instanceof DecidedAlready) return answerTo(id, action, actor, error.row);
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      // Another decision may have landed while this one was tried: that one answers.
      const landed = await this.decision(db, id);
      if (landed) return answerTo(id, action, actor, landed);
      throw refused(refusal.code);
    }
  }

  /** The parked entry as the queue held it, screened as the drainer screens it, its month's partition made. */
  private async prepared(bytes: Uint8Array): Promise<QueuedEntry> {
    const entry = JSON.parse(Buffer.from(bytes).toString('utf8')) as QueuedEntry;
    const refusal = screen(entry);
    if (refusal) throw refused(refusal.code);
    await ensurePartitions(this.store.db, [new Date(entry.createdAt)]);
    return entry;
  }

  private async decision(tx: SqlQueries, id: string): Promise<ActionRow | undefined> {
    const rows = await tx.query<ActionRow>(
      'SELECT action, client_id, reason, written, acted_at FROM ledger_parked_actions WHERE entry_sha256 = $1',
      [id],
    );
    return rows[0];
  }
}

function refused(code: string): ProblemException {
  return new ProblemException(
    'parked_entry_refused',
    `The ledger refused this entry again (SQLSTATE ${code}); it stays parked. Discard it with a reason, or fix what the database refuses and re-drive it.`,
  );
}

/** The same decision replayed; another is 409 saying what was decided, by whom and when. */
function answerTo(id: string, action: ParkedAction, actor: ParkedActor, row: ActionRow): ParkedActionFact {
  if (row.action === action && row.client_id === actor.clientId && row.reason === actor.reason)
    return factOf(id, row, true);
  const done = row.action === 'redriven' ? 're-driven into the ledger' : 'discarded';
  throw new ProblemException(
    'parked_entry_handled',
    `This parked entry was already ${done} by ${row.client_id} at ${new Date(row.acted_at).toISOString()} (reason: ${JSON.stringify(row.reason)}); nothing was done with this request.`,
  );
}

export function factOf(id: string, row: ActionRow, replayed: boolean): ParkedActionFact {
  return {
    id,
    action: row.action,
    by: row.client_id,
    reason: row.reason,
    at: new Date(row.acted_at).toISOString(),
    ...(row.written !== null ? { written: row.written } : {}),
    replayed,
  };
}
