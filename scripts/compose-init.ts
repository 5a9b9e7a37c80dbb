/**
 * `npm run compose:init`: what docker-compose.yml needs before its first `docker compose up` (README "Production-like
 * topology").
 *
 *   tsx scripts/compose-init.ts                      .env with a random POSTGRES_PASSWORD (kept if already set)
 *   tsx scripts/compose-init.ts --tls [--server-name temporal.example.com]
 *                                                    also deploy/tls/: the CA, server and client certificates of the
 *                                                    `mtls` profile's frontend (scripts/cluster/tls.ts, valid 365 days)
 *
 * `--root <dir>` writes under another directory than the repository (the tests use it). Nothing secret is printed:
 * .env is mode 0600; deploy/tls/ is 0700 with the client and CA keys 0600 (server.key is 0644 so the server
 * container's own user reads it through its bind mount; the directory keeps it from other users of this host).
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeTestPki } from './cluster/tls.js';

const { values } = parseArgs({
  options: {
    root: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    tls: { type: 'boolean', default: false },
    'server-name': { type: 'string', default: 'localhost' },
  },
});
const root = values.root;
const say = (s: string) => process.stdout.write(`${s}\n`);

const envFile = join(root, '.env');
const env = existsSync(envFile) ? readFileSync(envFile, 'utf8') : '';
if (/^POSTGRES_PASSWORD=./m.test(env)) {
  say('.env: POSTGRES_PASSWORD already set, kept');
} else {
  const lead = env === '' || env.endsWith('\n') ? '' : '\n';
  appendFileSync(envFile, `${lead}POSTGRES_PASSWORD=${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  say('.env: POSTGRES_PASSWORD set to a random value (48 hex digits)');
}
chmodSync(envFile, 0o600);

if (values.tls) {
  const dir = join(root, 'deploy', 'tls');
  const shown = relative(process.cwd(), dir) || '.';
  if (existsSync(join(dir, 'server.pem'))) {
    say(`${shown}: certificates already there, kept (delete the directory to make new ones)`);
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const pki = makeTestPki(dir, { serverName: values['server-name'], days: 365 });
    for (const leftover of ['server.csr', 'client.csr', 'server.ext', 'client.ext', 'ca.srl']) {
      rmSync(join(dir, leftover), { force: true });
    }
    chmodSync(join(dir, 'ca.key'), 0o600);
    chmodSync(pki.clientKey, 0o600);
    chmodSync(pki.serverKey, 0o644);
    const names = [...new Set([pki.serverName, 'localhost', '127.0.0.1'])].join(', ');
    say(`${shown}: CA, server certificate (for ${names}) and client certificate`);
  }
  const file = (name: string) => join(shown, name);
  say(
    `then: docker compose --profile mtls up --build, and connect with: npx keel --address localhost:7234 ` +
      `--tls-ca ${file('ca.pem')} --tls-cert ${file('client.pem')} --tls-key ${file('client.key')} list`,
  );
}
