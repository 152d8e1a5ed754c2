/**
 * `npm run sandbox` as an app developer uses it (docs/local-stack.md, "The sandbox's callers and
 * test data"): the narrow key's 403, the test inputs' non-match and supplier failures, a JWT
 * minted by `npm run sandbox:jwt` (and its usage), the package version in vgw_build_info.
 *
 * Then stopped by its PID, as a process manager or `kill <pid>` does: SIGTERM to
 * the npm process must end the gateway and the simulator too. (npm forwards the signal to its
 * one child; the script `exec`s node, so that child is the sandbox itself and not a shell
 * that would ignore the signal and leave the gateway serving.)
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { nextEvent } from './support/events.js';
import { freePort } from './support/redis-server.js';

const ROOT = new URL('..', import.meta.url).pathname;
const API_KEY = 'sandbox-script-test-key';

/** `PORT=<port> npm run --silent sandbox:jwt -- <args>`: the token it prints. */
async function mintToken(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'sandbox:jwt', '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
  });
  return stdout.trim();
}

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

  it('serves its documented callers and test data, then stops the gateway and the simulator on SIGTERM', async () => {
    const port = await freePort();
    const simulatorPort = await freePort();
    npm = spawn('npm', ['run', '--silent', 'sandbox'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        SIMULATOR_PORT: String(simulatorPort),
        LOG_LEVEL: 'warn',
        SANDBOX_API_KEY: API_KEY,
        // Its ledger in memory: by default the sandbox keeps it in .data/ledger, in the repository.
        LEDGER_DATA_DIR: 'memory://',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so the check below sees every descendant
    });
    let output = '';
    npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = nextEvent<number | null>(npm, 'exit', () => true, 120_000);
    await nextEvent(npm.stdout!, 'data', () => output.includes('Verification gateway sandbox on'), 100_000);
    expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
    expect(output).toContain(`Operators' console: http://127.0.0.1:${port}/console`);
    expect((await fetch(`http://127.0.0.1:${port}/console`)).status).toBe(200);

    const inquire = async (path: string, body: object, auth: Record<string, string>) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const key = { 'x-api-key': API_KEY };
    const mobileNumber = '09121234567';
    expect(await inquire('/v1/kyc/shahkar', { nationalCode: '0499370902', mobileNumber }, key)).toMatchObject({
      status: 200,
      body: { data: { isMatch: false } },
    });
    for (const [path, body] of [
      ['/v1/kyc/shahkar', { nationalCode: '0499370910', mobileNumber }],
      ['/v1/kyc/shahkar', { nationalCode: '0499370929', mobileNumber }],
      ['/v1/kyc/iban', { iban: 'IR490170000000000000000002' }],
      ['/v1/kyc/iban', { iban: 'IR140540000000000000000003' }],
    ] as const) {
      expect(await inquire(path, body, key)).toMatchObject({ status: 502, body: { code: 'upstream_error' } });
    }
    // The first supplier fails; advanced handling walks on to the second.
    const advanced = { iban: 'IR140540000000000000000003', requestHandlingType: 'advanced' };
    expect(await inquire('/v1/kyc/iban', advanced, key)).toMatchObject({ status: 200 });
    expect(
      await inquire('/v1/kyc/iban', { iban: 'IR820540102680020817909002' }, { 'x-api-key': `${API_KEY}-shahkar-only` }),
    ).toMatchObject({ status: 403, body: { code: 'forbidden' } });

    const token = await mintToken(port, '--scope', 'kyc:shahkar', '--sub', 'user-42');
    const bearer = { authorization: `Bearer ${token}` };
    expect(await inquire('/v1/kyc/shahkar', { nationalCode: '0499370899', mobileNumber }, bearer)).toMatchObject({
      status: 200,
      body: { data: { isMatch: true } },
    });
    expect(await inquire('/v1/kyc/iban', { iban: 'IR820540102680020817909002' }, bearer)).toMatchObject({
      status: 403,
    });
    // --help, and a mistyped option: the usage, never a stack (exit 2 for the mistake).
    expect(await mintToken(port, '--help')).toMatch(/^Usage: .*sandbox:jwt[\s\S]*--scope/);
    const mistyped = mintToken(port, '--scoep', 'kyc:shahkar');
    await expect(mistyped).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/'--scoep'[\s\S]*\nUsage: /),
    });
    await expect(mistyped).rejects.toMatchObject({ stderr: expect.not.stringContaining('    at ') });

    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics.split('\n')[0]).toMatch(/^# HELP vgw_build_info /);
    expect(metrics).toContain(`vgw_build_info{version="${version}"`);

    process.kill(npm.pid!, 'SIGTERM');
    await exited;
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${simulatorPort}/__simulator/state`)).rejects.toThrow();
    expect(groupAlive(npm.pid!)).toBe(false);
    // Its signing key went with it: no token for a sandbox that no longer runs.
    await expect(mintToken(port)).rejects.toMatchObject({ stderr: expect.stringContaining('start the sandbox first') });
  }, 150_000);
});
