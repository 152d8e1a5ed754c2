import { Body, Controller, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { ProblemException } from '../problem/problem.js';
import { operatorOnly } from './admin.controller.js';
import { LedgerCalls } from './ledger-call.js';
import { LedgerStore } from './ledger.store.js';
import { ParkedActions, reasonOf, type ParkedAction } from './parked-actions.js';
import { ApiParkedAction } from './parked-actions.openapi.js';

/**
 * Operators' decisions on parked ledger entries (docs/api.md §7): re-drive into the ledger, or
 * discard, each with a reason; on the ops listener with the other /admin/ routes. API keys only.
 */
@Controller('admin/ledger/parked')
@UseGuards(CallerAuthGuard)
export class ParkedActionsController {
  private readonly ledger = new LedgerCalls();
  private readonly actions: ParkedActions;

  constructor(store: LedgerStore) {
    this.actions = new ParkedActions(store);
  }

  @Post(':id/redrive')
  @HttpCode(200)
  @RequireScopes('ledger:read', 'ledger:reconcile')
  @ApiParkedAction('redriven')
  redrive(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
  ) {
    return this.act('redriven', caller, id, body, request);
  }

  @Post(':id/discard')
  @HttpCode(200)
  @RequireScopes('ledger:read', 'ledger:reconcile')
  @ApiParkedAction('discarded')
  discard(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
  ) {
    return this.act('discarded', caller, id, body, request);
  }

  private async act(action: ParkedAction, caller: Caller, id: string, body: unknown, request: FastifyRequest) {
    operatorOnly(caller);
    if (!/^[0-9a-f]{64}$/.test(id)) throw new ProblemException('not_found', 'No parked ledger entry has this id.');
    const reason = reasonOf(body);
    const actor = { clientId: caller.clientId, reason, requestId: request.id };
    return this.ledger.run(`parked entry ${action === 'redriven' ? 're-drive' : 'discard'}`, () =>
      this.actions.act(id, action, actor),
    );
  }
}
