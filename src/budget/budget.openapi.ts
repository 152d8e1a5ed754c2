import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { BUDGET_WINDOWS, type BudgetWindowName } from './budget-windows.js';

/** One budget window's state (docs/api.md §6, "Budgets"). */
@ApiSchema({ name: 'Budget', description: 'One budget window: limit, spent, reserved and remaining cost units.' })
export class BudgetSchema {
  @ApiProperty({ enum: BUDGET_WINDOWS, description: 'Calendar day or month in `BUDGET_TIMEZONE` / `BUDGET_CALENDAR`.' })
  window!: BudgetWindowName;

  @ApiProperty({ type: Number, example: 1000 })
  limitUnits!: number;

  @ApiProperty({ type: Number, description: 'Committed: succeeded and `unknown` (possibly charged) inquiries.' })
  spentUnits!: number;

  @ApiProperty({ type: Number, description: 'Held by inquiries still in flight.' })
  reservedUnits!: number;

  @ApiProperty({ type: Number, description: 'limitUnits − spentUnits − reservedUnits, never below 0.' })
  remainingUnits!: number;

  @ApiProperty({ type: String, format: 'date-time', description: 'When the window ends and a new one begins.' })
  resetsAt!: string;
}

@ApiSchema({ name: 'ClientBudgets', description: 'The budgets of one client id (`*`: all callers together).' })
export class ClientBudgetsSchema {
  @ApiProperty({ type: String, example: 'svc-a' })
  clientId!: string;

  @ApiProperty({ type: [BudgetSchema] })
  budgets!: BudgetSchema[];
}

@ApiSchema({ name: 'AllBudgets', description: 'Every configured budget with its state.' })
export class AllBudgetsSchema {
  @ApiProperty({ type: [ClientBudgetsSchema] })
  budgets!: ClientBudgetsSchema[];
}
