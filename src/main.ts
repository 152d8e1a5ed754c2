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
  // SIGTERM (Kubernetes) or SIGINT: readiness turns 503, in-flight inquiries finish, owed
  // settlements are flushed, connections close (the Nest shutdown hooks), then exit 0. Our own
  // handler rather than enableShutdownHooks(), which re-sends the signal to itself afterwards:
  // as PID 1 in a container that signal is ignored, and the exit would hang on any live handle.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
  await app.listen({ port: config.http.port, host: '0.0.0.0' });
}

await main();
