import type { Caller } from '../caller-auth/caller.js';
import type { SqlQueries } from './ledger-database.js';

/** Who acted: a console sign-in (its token's `sub`, and name when it has one) or an API key. */
export interface Operator {
  kind: 'operator' | 'api_key';
  id: string;
  name?: string;
}

export type OperatorAction = 'reconciliation' | 'export' | 'delivery_retry';

/** A recorded action, as GET /admin/operator-actions answers it. */
export interface OperatorActionRecord extends Operator {
  at: string;
  action: OperatorAction;
  requestId: string | null;
  summary: Record<string, unknown>;
}

export function operatorOf(caller: Caller): Operator {
  if (caller.credential === 'operator' && caller.operator)
    return {
      kind: 'operator',
      id: caller.operator.subject,
      ...(caller.operator.name !== undefined ? { name: caller.operator.name } : {}),
    };
  return { kind: 'api_key', id: caller.clientId };
}

/**
 * Appends who did what (migration 14): in the caller's transaction when the action writes to the
 * ledger (a reconciliation and its record commit or roll back together), else on its own.
 * `summary` holds counts, periods and client ids only: never an end user's data.
 */
export async function recordAction(
  db: SqlQueries,
  operator: Operator,
  action: OperatorAction,
  summary: Record<string, unknown>,
  requestId: string | undefined,
): Promise<void> {
  await db.query(
    `INSERT INTO ledger_operator_actions (action, operator_kind, operator_id, operator_name, request_id, summary)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb)`,
    [action, operator.kind, operator.id, operator.name ?? null, requestId ?? null, JSON.stringify(summary)],
  );
}

/** The latest actions, newest first (at most `limit`, clamped to 1…500). */
export async function latestActions(db: SqlQueries, limit: number): Promise<OperatorActionRecord[]> {
  const rows = await db.query<{
    at: Date;
    action: OperatorAction;
    operator_kind: Operator['kind'];
    operator_id: string;
    operator_name: string | null;
    request_id: string | null;
    summary: Record<string, unknown> | string;
  }>(
    `SELECT at, action, operator_kind, operator_id, operator_name, request_id, summary
     FROM ledger_operator_actions ORDER BY at DESC, id DESC LIMIT $1`,
    [Math.min(Math.max(Math.trunc(limit) || 50, 1), 500)],
  );
  return rows.map((row) => ({
    at: new Date(row.at).toISOString(),
    action: row.action,
    kind: row.operator_kind,
    id: row.operator_id,
    ...(row.operator_name !== null ? { name: row.operator_name } : {}),
    requestId: row.request_id,
    summary: typeof row.summary === 'string' ? (JSON.parse(row.summary) as Record<string, unknown>) : row.summary,
  }));
}
