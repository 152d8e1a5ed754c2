import { createHash } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createGateway } from '../../src/bootstrap.js';
import { TokenProvider } from '../../src/token/token.provider.js';

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Test callers: the raw keys are what a client sends in `X-Api-Key`. */
export const TEST_CLIENTS = {
  full: { clientId: 'app-full', key: 'key-full-0123456789', scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced'] },
  basic: { clientId: 'app-basic', key: 'key-basic-0123456789', scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read'] },
  other: { clientId: 'app-other', key: 'key-other-0123456789', scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced'] },
  none: { clientId: 'app-none', key: 'key-none-0123456789', scopes: [] as string[] },
} as const;

export const TEST_API_KEYS = JSON.stringify(
  Object.values(TEST_CLIENTS).map(({ clientId, key, scopes }) => ({ clientId, keySha256: sha256(key), scopes })),
);

export interface RunningGateway {
  app: NestFastifyApplication;
  url: string;
  tokens: TokenProvider;
  close(): Promise<void>;
}

/** Starts one gateway instance on a free loopback port. */
export async function startGateway(env: Record<string, string | undefined>): Promise<RunningGateway> {
  const { app } = await createGateway(
    { UPSTREAM_USERNAME: 'sandbox-user', UPSTREAM_PASSWORD: 'sandbox-password', API_KEYS: TEST_API_KEYS, LOG_LEVEL: 'silent', ...env },
    { logger: false },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}`, tokens: app.get(TokenProvider), close: () => app.close() };
}

/** Several instances sharing one Redis (and one upstream), as replicas would. */
export async function startGateways(count: number, env: Record<string, string | undefined>): Promise<RunningGateway[]> {
  return Promise.all(Array.from({ length: count }, () => startGateway(env)));
}
