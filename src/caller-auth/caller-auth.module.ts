import { Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from './api-key.authenticator.js';
import { CALLER_AUTHENTICATORS } from './caller.js';
import { CallerAuthGuard } from './caller-auth.guard.js';

/** Caller identity. A JWT authenticator joins the list beside the API key one. */
@Module({
  providers: [
    ApiKeyAuthenticator,
    { provide: CALLER_AUTHENTICATORS, inject: [ApiKeyAuthenticator], useFactory: (apiKeys: ApiKeyAuthenticator) => [apiKeys] },
    CallerAuthGuard,
  ],
  exports: [CallerAuthGuard, CALLER_AUTHENTICATORS],
})
export class CallerAuthModule {}
