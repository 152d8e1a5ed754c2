import { createGateway } from './bootstrap.js';
import { ConfigError } from './config/load-config.js';

/** Production entry: `node dist/main.js`. Configuration comes from the environment only. */
async function main(): Promise<void> {
  let gateway;
  try {
    gateway = await createGateway(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      // Names the variables, never their values.
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const { app, config } = gateway;
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen({ port: config.http.port, host: '0.0.0.0' });
}

await main();
