/**
 * `[PORT=3000] npm run --silent sandbox:jwt -- [--scope "kyc:shahkar inquiries:read"] [--sub user-42]
 * [--client my-app] [--seconds 3600]`: prints a JWT the sandbox running on PORT accepts as an
 * app's end user (docs/local-stack.md, "Sandbox callers"), nothing else, so `TOKEN=$(…)` works.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_TOKEN_CLAIMS, mintSandboxToken } from './sandbox-jwt.js';

const USAGE = `Usage: [PORT=3000] npm run --silent sandbox:jwt -- [options]
Prints a JWT the sandbox running on PORT accepts, as an app's end user.
  --scope "<scopes>"   space-separated scopes (default: "${DEFAULT_TOKEN_CLAIMS.scope}")
  --sub <id>           the end user, the JWT's sub (default: ${DEFAULT_TOKEN_CLAIMS.subject})
  --client <id>        the app, its client id (default: ${DEFAULT_TOKEN_CLAIMS.clientId})
  --seconds <n>        lifetime, 1 to 86400 (default: ${DEFAULT_TOKEN_CLAIMS.lifetimeSeconds})
  --help               this text
`;

let parsed;
try {
  parsed = parseArgs({
    options: {
      scope: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.scope },
      sub: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.subject },
      client: { type: 'string', default: DEFAULT_TOKEN_CLAIMS.clientId },
      seconds: { type: 'string', default: String(DEFAULT_TOKEN_CLAIMS.lifetimeSeconds) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
} catch (error) {
  // A mistyped option or a missing value: what was wrong, then the usage, never a stack.
  console.error(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
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
