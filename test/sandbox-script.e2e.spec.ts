/**
 * `npm run sandbox` stopped by its PID, as a process manager or `kill <pid>` does: SIGTERM to
 * the npm process must end the gateway and the simulator too. (npm forwards the signal to its
 * one child; the script `exec`s node, so that child is the sandbox itself and not a shell
 * that would ignore the signal and leave the gateway serving.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from '@jest/globals';
import { nextEvent } from './support/events.js';
import { freePort } from './support/redis-server.js';

/** True while any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm run sandbox', () => {
  let npm: ChildProcess | undefined;

  afterAll(() => {
    // Whatever went wrong, leave nothing behind: the whole process group.
    if (npm?.pid && groupAlive(npm.pid)) process.kill(-npm.pid, 'SIGKILL');
  });

  it('stops the gateway and the simulator when the npm process gets SIGTERM', async () => {
    const port = await freePort();
    const simulatorPort = await freePort();
    npm = spawn('npm', ['run', '--silent', 'sandbox'], {
      cwd: new URL('..', import.meta.url).pathname,
      env: { ...process.env, PORT: String(port), SIMULATOR_PORT: String(simulatorPort), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so the check below sees every descendant
    });
    let output = '';
    npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = nextEvent<number | null>(npm, 'exit', () => true, 120_000);
    await nextEvent(npm.stdout!, 'data', () => output.includes('Verification gateway sandbox on'), 100_000);
    expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);

    process.kill(npm.pid!, 'SIGTERM');
    await exited;
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${simulatorPort}/__simulator/state`)).rejects.toThrow();
    expect(groupAlive(npm.pid!)).toBe(false);
  }, 150_000);
});
