import { Module } from '@nestjs/common';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { StoreModule } from '../store/store.module.js';
import { TokenModule } from '../token/token.module.js';
import { UpstreamModule } from '../upstream/upstream.module.js';
import { ConsoleAssets } from './console-assets.js';
import { AdminStatusController, ConsoleController } from './console.controller.js';
import { GatewayStatusReader } from './gateway-status.js';
import { RegisteredRoutes } from './registered-routes.js';

/**
 * The operators' console (docs/operations.md, "The console") and `GET /admin/status`.
 * The ledger's status comes from LedgerModule (`LEDGER_STATUS`, src/ledger/ledger-status.ts).
 */
@Module({
  imports: [CallerAuthModule, LedgerModule, StoreModule, TokenModule, UpstreamModule],
  controllers: [ConsoleController, AdminStatusController],
  providers: [ConsoleAssets, GatewayStatusReader, RegisteredRoutes],
})
export class ConsoleModule {}
