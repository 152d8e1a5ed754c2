import { Readable } from 'node:stream';
import {
  Controller,
  Get,
  HttpCode,
  Injectable,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
  type OnModuleInit,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { HttpAdapterHost } from '@nestjs/core';
import { isUUID } from 'class-validator';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import type { UnitPrice } from '../config/budget-config.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { ProblemException } from '../problem/problem.js';
import type { EntryStatus } from './ledger-entry.js';
import { ENTRY_FIELDS, LedgerStore, type ExportFilter } from './ledger.store.js';
import { usage } from './ledger-usage.js';
import { Reconciliations } from './reconciliation.js';
import { LedgerCalls } from './ledger-call.js';
import { ledgerRange as range } from './ledger-dates.js';
import { ApiLedgerExport, ApiUsage } from './admin.openapi.js';
import { ApiParkedEntries, ApiReconciliation } from './ledger-ops.openapi.js';
import { ParkedEntries } from './parked-entries.js';
import { InquiryList } from './inquiry-list.js';
import { STATUSES, inquiryFilterOf, invalidParameter, single, type AdminQuery } from './admin-query.js';
import { spentAndSavedJson } from './recorded-money.js';
import { unitsJson } from './unit-sums.js';
import { operatorOf, recordAction } from './operator-actions.js';

const NDJSON = 'application/x-ndjson';
const CSV = 'text/csv';

/** RFC 4180 field: quoted when it holds a comma, quote or line break; a leading =+-@ is neutralised (CSV injection). */
function csvField(value: string | number | undefined): string {
  if (value === undefined) return '';
  let text = String(value);
  if (/^[=+\-@]/.test(text) && typeof value === 'string') text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Administration (docs/api.md §7): the ledger export, usage, reconciliations. API keys and
 * operators' console tokens (`ledger:read`, `ledger:reconcile`; an app's JWT never carries them);
 * on the ops listener when OPS_PORT is set (http/ops-listener.ts binds every /admin/ route).
 */
@Controller('admin')
@UseGuards(CallerAuthGuard)
export class AdminController {
  private readonly ledger = new LedgerCalls();
  private readonly unitPrice: UnitPrice | undefined;

  constructor(
    private readonly store: LedgerStore,
    private readonly reconciliations: Reconciliations,
    private readonly list: InquiryList,
    config: ConfigService<AppConfig, true>,
  ) {
    this.unitPrice = config.get('budgets', { infer: true }).unitPrice;
  }

  /**
   * Entries streamed in keyset pages: NDJSON (default) or CSV; memory holds one page. With
   * `latest=true`, one row per inquiry (its latest fact) under the list's filters, newest first:
   * exactly the rows GET /admin/inquiries pages through (the console's download).
   */
  @Get('ledger')
  @RequireScopes('ledger:read')
  @ApiLedgerExport()
  async exportLedger(
    @CurrentCaller() caller: Caller,
    @Query() query: AdminQuery,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    operatorOnly(caller);
    const latest = single(query, 'latest');
    if (latest !== undefined && latest !== 'true' && latest !== 'false')
      throw new ProblemException('validation_failed', 'latest must be true or false.', {
        errors: [{ field: 'latest', message: 'must be true or false' }],
      });
    const source = latest === 'true' ? this.list.all(inquiryFilterOf(query)) : this.store.entries(entryFilterOf(query));
    const csv = (request.headers.accept ?? '').includes(CSV);
    const entries = source[Symbol.asyncIterator]();
    // The first page before the status line: PostgreSQL down is a 503, not a cut 200.
    const first = await this.ledger.run('ledger export', () => entries.next());
    // Who downloaded what (no end user's data: the filters are periods, client ids and statuses);
    // one inquiry looked up by its trackId (the console's "One inquiry") is a lookup, not an export.
    if (single(query, 'trackId') === undefined)
      await this.ledger.run('ledger export record', () =>
        recordAction(this.store.db, operatorOf(caller), 'export', exportSummary(query, csv), request.id),
      );
    const rest = { [Symbol.asyncIterator]: () => entries };
    const lines = async function* () {
      if (csv) yield `${ENTRY_FIELDS.join(',')}\r\n`;
      if (first.done) return;
      yield csv
        ? `${ENTRY_FIELDS.map((column) => csvField(first.value[column])).join(',')}\r\n`
        : `${JSON.stringify(first.value)}\n`;
      for await (const entry of rest) {
        yield csv
          ? `${ENTRY_FIELDS.map((column) => csvField(entry[column])).join(',')}\r\n`
          : `${JSON.stringify(entry)}\n`;
      }
    };
    void reply
      .header('content-type', csv ? `${CSV}; charset=utf-8` : NDJSON)
      .header('cache-control', 'no-store')
      .send(Readable.from(lines()));
  }

  @Get('usage')
  @RequireScopes('ledger:read')
  @ApiUsage()
  async usage(@CurrentCaller() caller: Caller, @Query() query: AdminQuery) {
    operatorOnly(caller);
    const { from, to } = range(single(query, 'from'), single(query, 'to'));
    const period = single(query, 'period') ?? 'day';
    if (period !== 'day' && period !== 'month')
      throw new ProblemException('validation_failed', 'period must be day or month.', {
        errors: [{ field: 'period', message: 'must be day or month' }],
      });
    const rows = await this.ledger.run('ledger usage', () => usage(this.store, from, to, period));
    const price = this.unitPrice;
    return {
      timeZone: 'UTC',
      period,
      from: from.toISOString(),
      to: to.toISOString(),
      // Money where COST_UNIT_PRICE is set: each entry's units × the price it recorded, in today's
      // currency; unpriced units and other currencies apart, never converted (recorded-money.ts).
      usage: rows.map(({ spent, saved, ...row }) => ({
        ...row,
        unitsSpent: unitsJson(row.unitsSpent),
        unitsSaved: unitsJson(row.unitsSaved),
        ...(price ? spentAndSavedJson(spent, saved, price) : {}),
      })),
    };
  }

  /** Entries the database refused, parked by the drainer (docs/runbooks.md, LedgerEntriesParked). */
  @Get('ledger/parked')
  @RequireScopes('ledger:read')
  @ApiParkedEntries()
  async parkedEntries(@CurrentCaller() caller: Caller, @Query() query: AdminQuery) {
    operatorOnly(caller);
    const { from, to } = range(single(query, 'from'), single(query, 'to'));
    const found = await this.ledger.run('ledger parked entries', () => new ParkedEntries(this.store).list(from, to));
    return { from: from.toISOString(), to: to.toISOString(), ...found };
  }

  @Post('reconciliations')
  @HttpCode(200)
  @ApiReconciliation()
  @RequireScopes('ledger:read', 'ledger:reconcile')
  async reconcile(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, string | undefined>,
    @Req() request: FastifyRequest,
  ) {
    operatorOnly(caller);
    const period = query.from !== undefined || query.to !== undefined ? range(query.from, query.to) : undefined;
    if (!(request.body instanceof Readable))
      throw new ProblemException('validation_failed', 'The body must be text/csv with a trackId header column.');
    const body = request.body;
    if (query.dryRun !== undefined && query.dryRun !== 'true' && query.dryRun !== 'false')
      throw new ProblemException('validation_failed', 'dryRun must be true or false.', {
        errors: [{ field: 'dryRun', message: 'must be true or false' }],
      });
    const dryRun = query.dryRun === 'true';
    const digest = query.digest;
    if (digest !== undefined && (dryRun || !/^[A-Za-z0-9_-]{43}$/.test(digest)))
      throw new ProblemException('validation_failed', "digest must be a dry run's digest, without dryRun=true.", {
        errors: [{ field: 'digest', message: "must be a dry run's digest (43 characters), without dryRun=true" }],
      });
    return this.ledger.run('ledger reconciliation', () =>
      this.reconciliations.reconcile(body, {
        requestId: request.id,
        period,
        dryRun,
        operator: operatorOf(caller),
        ...(digest !== undefined ? { digest } : {}),
      }),
    );
  }
}

/** An export's record: its format and filters. */
function exportSummary(query: AdminQuery, csv: boolean): Record<string, unknown> {
  const summary: Record<string, unknown> = { format: csv ? 'csv' : 'ndjson' };
  for (const name of ['latest', 'from', 'to', 'clientId', 'status', 'operation', 'charged'])
    if (single(query, name) !== undefined) summary[name] = single(query, name);
  return summary;
}

/** The per-entry export's filter: period, client, status (of each entry), one trackId. */
function entryFilterOf(query: AdminQuery): ExportFilter {
  const filter: ExportFilter = { ...range(single(query, 'from'), single(query, 'to')) };
  // The list's other filters judge an inquiry by its latest fact: one row per inquiry, latest=true.
  for (const name of ['operation', 'handling', 'charged', 'reused'])
    if (query[name] !== undefined) throw invalidParameter(name, 'filters inquiries: it needs latest=true');
  const clientId = single(query, 'clientId');
  if (clientId !== undefined) filter.clientId = clientId;
  const status = single(query, 'status');
  if (status !== undefined) {
    if (!STATUSES.includes(status as EntryStatus))
      throw new ProblemException('validation_failed', 'status must be succeeded, failed or unknown.', {
        errors: [{ field: 'status', message: 'must be succeeded, failed or unknown' }],
      });
    filter.status = status as EntryStatus;
  }
  const trackId = single(query, 'trackId');
  if (trackId !== undefined) {
    if (!isUUID(trackId))
      throw new ProblemException('validation_failed', 'trackId must be a UUID.', {
        errors: [{ field: 'trackId', message: 'must be a UUID' }],
      });
    filter.trackId = trackId.toLowerCase();
  }
  return filter;
}

/**
 * Administration takes API keys and operators' console tokens, never an app's JWT (docs/api.md §7):
 * an app's token never carries `ledger:*` anyway (jwt.authenticator.ts); this is the second lock.
 */
export function operatorOnly(caller: Caller): void {
  if (caller.credential === 'jwt')
    throw new ProblemException('forbidden', "Administration accepts API keys and operators' tokens, not apps' JWTs.");
}

/**
 * `text/csv` bodies reach POST /admin/reconciliations as a stream (never buffered: a provider's
 * list may hold a million rows), outside BODY_LIMIT_BYTES, which is for JSON inquiries.
 */
@Injectable()
export class CsvBodies implements OnModuleInit {
  constructor(private readonly adapter: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.addContentTypeParser(CSV, (_request, payload, done) => done(null, payload));
  }
}
