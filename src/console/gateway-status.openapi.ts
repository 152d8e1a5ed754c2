import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { BUILT_IN_OPERATIONS } from '../inquiry/catalog/built-in-operations.js';

@ApiSchema({ name: 'StatusBuild', description: 'The running build (as `vgw_build_info`).' })
class StatusBuildSchema {
  @ApiProperty({ type: String, example: '0.1.0' }) version!: string;
  @ApiProperty({ type: String, example: '3f2c1e0' }) commit!: string;
}

@ApiSchema({ name: 'StatusToken', description: 'The upstream access token this replica holds.' })
class StatusTokenSchema {
  @ApiProperty({ enum: ['valid', 'expired', 'none'], description: '`none`: no token held yet.' })
  state!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the upstream says it expires.' })
  validUntil!: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: "When this replica took it (its own renewal, or another replica's adopted).",
  })
  renewedAt!: string | null;
  @ApiProperty({ type: Number, description: 'Failed renewals since this replica started.' })
  renewalFailures!: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'number' },
    description: 'The same, by reason (as `vgw_token_renewal_failures_total`).',
  })
  renewalFailuresByReason!: Record<string, number>;
}

@ApiSchema({
  name: 'StatusCircuit',
  description: 'The upstream circuit breaker (docs/api.md §3, upstream_unavailable).',
})
class StatusCircuitSchema {
  @ApiProperty({ enum: ['closed', 'open', 'half-open'] }) state!: string;
}

@ApiSchema({ name: 'StatusRedis', description: 'The record store.' })
class StatusRedisSchema {
  @ApiProperty({ enum: ['memory', 'standalone', 'sentinel', 'cluster'] }) mode!: string;
  @ApiProperty({ type: Boolean, description: 'The connection is ready (always true for the in-process store).' })
  reachable!: boolean;
}

@ApiSchema({ name: 'StatusLedger', description: 'PostgreSQL and the queue of entries on their way to it.' })
class StatusLedgerSchema {
  @ApiProperty({ enum: ['postgres', 'embedded'] }) database!: string;
  @ApiProperty({ type: Boolean }) databaseReachable!: boolean;
  @ApiProperty({ type: Number, nullable: true, description: 'Entries waiting; null when it cannot be read.' })
  queueDepth!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Age in seconds of the oldest waiting entry.' })
  queueOldestAgeSeconds!: number | null;
}

@ApiSchema({ name: 'StatusRoutes', description: 'Which administration routes this build serves.' })
class StatusRoutesSchema {
  @ApiProperty({ type: Boolean }) ledger!: boolean;
  @ApiProperty({ type: Boolean }) usage!: boolean;
  @ApiProperty({ type: Boolean }) budgets!: boolean;
  @ApiProperty({ type: Boolean }) reconciliations!: boolean;
  @ApiProperty({ type: Boolean }) inquiries!: boolean;
  @ApiProperty({ type: Boolean }) trends!: boolean;
  @ApiProperty({ type: Boolean }) forecast!: boolean;
  @ApiProperty({ type: Boolean }) parked!: boolean;
  @ApiProperty({ type: Boolean }) operatorActions!: boolean;
  @ApiProperty({ type: Boolean }) webhooks!: boolean;
  @ApiProperty({ type: Boolean }) parkedActions!: boolean;
}

@ApiSchema({ name: 'StatusBudgetRefusals' })
class StatusBudgetRefusalSchema {
  @ApiProperty({ type: String, description: 'The budget that refused: a client id, or * for all callers.' })
  budget!: string;
  @ApiProperty({ type: String, enum: ['daily', 'monthly'] }) window!: string;
  @ApiProperty({ type: Number }) count!: number;
}

@ApiSchema({ name: 'StatusQuotaRefusals' })
class StatusQuotaRefusalSchema {
  @ApiProperty({ type: String, enum: ['client', 'user'] }) scope!: string;
  @ApiProperty({ type: Number }) count!: number;
}

@ApiSchema({
  name: 'StatusRefusals',
  description: '429s this replica answered since it started (refusals never reach the ledger).',
})
class StatusRefusalsSchema {
  @ApiProperty({ type: [StatusBudgetRefusalSchema] }) budget!: StatusBudgetRefusalSchema[];
  @ApiProperty({ type: [StatusQuotaRefusalSchema] }) quota!: StatusQuotaRefusalSchema[];
}

@ApiSchema({ name: 'GatewayStatus', description: "One replica's state, for the operators' console." })
export class GatewayStatusSchema {
  @ApiProperty({ type: String, format: 'date-time' }) checkedAt!: string;
  @ApiProperty({ type: StatusBuildSchema }) build!: StatusBuildSchema;
  @ApiProperty({ type: StatusTokenSchema }) token!: StatusTokenSchema;
  @ApiProperty({ type: StatusCircuitSchema }) circuit!: StatusCircuitSchema;
  @ApiProperty({ type: StatusRedisSchema }) redis!: StatusRedisSchema;
  @ApiProperty({ type: Number, description: '`Prefer: wait` long-polls this replica holds now.' })
  heldLongPolls!: number;
  @ApiProperty({ type: StatusLedgerSchema, nullable: true, description: 'null: no ledger in this build.' })
  ledger!: StatusLedgerSchema | null;
  @ApiProperty({ type: StatusRoutesSchema }) routes!: StatusRoutesSchema;
  @ApiProperty({
    type: [String],
    description: 'The operations of this gateway’s catalog, by name: the built-ins, then those the operator added.',
    example: [...BUILT_IN_OPERATIONS.map((operation) => operation.name), 'card-to-iban'],
  })
  operations!: string[];
  @ApiProperty({ type: StatusRefusalsSchema }) refusals!: StatusRefusalsSchema;
  @ApiProperty({
    type: [String],
    description: 'The scopes of the key that asked: the console offers only what it may do.',
    example: ['ledger:read', 'ledger:reconcile'],
  })
  scopes!: string[];
}

@ApiSchema({ name: 'Operator', description: 'Who a request to the administration routes acts as.' })
export class OperatorSchema {
  @ApiProperty({ enum: ['operator', 'api_key'], description: '`operator`: signed in to the console.' })
  kind!: string;
  @ApiProperty({ type: String, description: "The operator token's `sub`, or the API key's client id." })
  id!: string;
  @ApiProperty({ type: String, required: false, description: "The operator token's `name` (or `preferred_username`)." })
  name?: string;
  @ApiProperty({ type: [String], example: ['ledger:read', 'ledger:reconcile'] })
  scopes!: string[];
}
