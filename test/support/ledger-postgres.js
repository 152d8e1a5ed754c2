import process from 'node:process';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One PostgreSQL server for the whole test run, the ledger of every gateway the tests start
 * (test/support/gateway.ts reads VGW_TEST_LEDGER_DATABASE_URL): without it each gateway would
 * open its own embedded PGlite (seconds of CPU and ~200 MiB each). The ledger's own tests start
 * servers of their own (postgres-server.ts) to kill and restart. Skipped, leaving gateways on
 * PGlite, when the server binaries are not installed. Runs as the `postgres` user under root
 * (PostgreSQL refuses root).
 */
export async function startRunPostgres() {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((m) => existsSync(join(root, m, 'bin', 'initdb'))) : [];
  if (majors.length === 0) return undefined;
  const bin = join(root, majors.sort((a, b) => Number(b) - Number(a))[0], 'bin');
  const user =
    process.getuid?.() === 0
      ? {
          uid: Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()),
          gid: Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()),
        }
      : {};
  const dir = mkdtempSync(join(tmpdir(), 'vgw-postgres-run-'));
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync'],
    {
      encoding: 'utf8',
      ...user,
    },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.slice(-500)}`);
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  probe.close();
  const child = spawn(
    join(bin, 'postgres'),
    ['-D', join(dir, 'data'), '-k', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...user },
  );
  let output = '';
  await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      output += chunk.toString();
      if (output.includes('ready to accept connections')) {
        child.stderr.off('data', onData);
        child.stderr.resume();
        resolve();
      }
    };
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`postgres exited with ${code}: ${output.slice(-500)}`)));
  });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGQUIT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
