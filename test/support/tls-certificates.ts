import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PEM files of a throw-away CA, a server certificate for 127.0.0.1/localhost and a client certificate. */
export interface TestCertificates {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA that signed nothing here: trusting it alone must fail the handshake. */
  otherCaCert: string;
  remove(): void;
}

/** Made with the machine's openssl, valid for a day, P-256 keys (fast to generate). */
export async function makeCertificates(): Promise<TestCertificates> {
  const dir = mkdtempSync(join(tmpdir(), 'vgw-tls-'));
  const path = (name: string) => join(dir, name);
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = async (name: string) =>
    run('openssl', [
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.crt`),
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
    ]);
  await Promise.all([ca('vgw-test-ca'), ca('vgw-other-ca')]);
  writeFileSync(path('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const leaf = async (name: string, extensions: string[]) => {
    await run('openssl', [
      'req',
      '-new',
      ...ecKey,
      '-keyout',
      path(`${name}.key`),
      '-out',
      path(`${name}.csr`),
      '-subj',
      `/CN=${name}`,
    ]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('vgw-test-ca.crt'),
      '-CAkey',
      path('vgw-test-ca.key'),
      '-CAcreateserial',
      '-out',
      path(`${name}.crt`),
      '-days',
      '1',
      ...extensions,
    ]);
  };
  await leaf('server', ['-extfile', path('san.ext')]);
  await leaf('client', []);
  return {
    dir,
    caCert: path('vgw-test-ca.crt'),
    serverCert: path('server.crt'),
    serverKey: path('server.key'),
    clientCert: path('client.crt'),
    clientKey: path('client.key'),
    otherCaCert: path('vgw-other-ca.crt'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** redis-server arguments for TLS only (no plain port), client certificates required. */
export function redisTlsArgs(certs: TestCertificates, port: number): string[] {
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    certs.serverCert,
    '--tls-key-file',
    certs.serverKey,
    '--tls-ca-cert-file',
    certs.caCert,
    '--tls-auth-clients',
    'yes',
  ];
}

/** redis-cli arguments to reach such a server. */
export function redisCliTlsArgs(certs: TestCertificates): string[] {
  return ['--tls', '--cacert', certs.caCert, '--cert', certs.serverCert, '--key', certs.serverKey];
}
