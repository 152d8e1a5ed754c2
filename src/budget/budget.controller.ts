import { Controller, Get, UseGuards } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { AppConfig } from '../config/app-config.js';
import { scopeOf } from '../inquiry/catalog/operation.js';
import { API_KEY_SCHEME, JWT_SCHEME } from '../openapi.js';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { ProblemException } from '../problem/problem.js';
import { Budgets, type ClientBudgets } from './budgets.js';
import { AllBudgetsSchema, ClientBudgetsSchema } from './budget.openapi.js';

/**
 * `GET /v1/budget` for a caller's own budgets and `GET /admin/budgets` for all of them
 * (docs/api.md §6). `/admin/*` is bound to the ops listener when OPS_PORT is set
 * (http/ops-listener.ts), and `ledger:read` is honoured on API keys and operators' console tokens only.
 */
@Controller()
@UseGuards(CallerAuthGuard)
export class BudgetController {
  /** `kyc:{name}` of every operation of the catalog: any one of them opens the caller's own view. */
  private readonly inquiryScopes: ReadonlyArray<ReturnType<typeof scopeOf>>;

  constructor(
    private readonly budgets: Budgets,
    config: ConfigService<AppConfig, true>,
  ) {
    this.inquiryScopes = config.get('operations', { infer: true }).map((operation) => scopeOf(operation.name));
  }

  @Get('v1/budget')
  @ApiOperation({
    summary: "The caller's own budgets: limit, spent, reserved and remaining units per window",
    description:
      'Any inquiry scope (`kyc:{name}` of an operation of the catalog, e.g. `kyc:shahkar`). A client without a ' +
      'budget gets an empty list.',
  })
  @ApiTags('budgets')
  @ApiSecurity(API_KEY_SCHEME)
  @ApiSecurity(JWT_SCHEME, ['kyc:shahkar'])
  @ApiOkResponse({ type: ClientBudgetsSchema })
  @ApiProblemResponses(['unauthenticated', 'forbidden', 'internal', 'auth_unavailable', 'store_unavailable'])
  own(@CurrentCaller() caller: Caller): Promise<ClientBudgets> {
    if (!this.inquiryScopes.some((scope) => caller.scopes.has(scope))) {
      throw new ProblemException('forbidden', 'The credential lacks an inquiry scope (kyc:<operation>).');
    }
    return this.budgets.view(caller.clientId);
  }

  @Get('admin/budgets')
  @RequireScopes('ledger:read')
  @ApiOperation({ summary: 'Every configured budget with its state (API keys with ledger:read)' })
  @ApiTags('administration')
  @ApiSecurity(API_KEY_SCHEME)
  @ApiOkResponse({ type: AllBudgetsSchema })
  @ApiProblemResponses(['unauthenticated', 'forbidden', 'internal', 'store_unavailable'])
  async all(): Promise<{ budgets: ClientBudgets[] }> {
    return { budgets: await this.budgets.all() };
  }
}
