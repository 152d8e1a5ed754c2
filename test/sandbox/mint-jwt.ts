/**
 * `[PORT=3000] npm run --silent sandbox:jwt -- [--scope "kyc:shahkar inquiries:read"] [--sub user-42]
 * [--client my-app] [--seconds 3600]`: prints a JWT the sandbox running on PORT accepts as an
 * app's end user (docs/local-stack.md, "Sandbox callers"), nothing else, so `TOKEN=$(…)` works.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_TOKEN_CLAIMS, mintSandboxToken } from './sandbox-jwt.js';

const { values } = parseArgs({
  options: {
    scope: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.scope },
    sub: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.subject },
    client: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.clientId },
    seconds: { type: 'string', default: String(DEFAULT_TOKEN_CLAIMS.lifetimeSeconds) },
  },
});
const seconds = Number(values.seconds);
if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) {
  console.error('--seconds must be a whole number of seconds between 1 and 86400');
  process.exit(2);
}
const port = Number(process.env.PORT || 3000);
try {
  const token = await mintSandboxToken(port, {
    clientId: values.client,
    subject: values.sub,
    scope: values.scope,
    lifetimeSeconds: seconds,
  });
  process.stdout.write(`${token}\n`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
