/**
 * docker-compose.yml runs the Temporal Server the README's upgrade path needs (issue 20 item 9): upgrade on
 * continue-as-new (idle sessions moving to a new build) needs Temporal Server 1.32, the server of Temporal CLI 1.9.1
 * and of `npm run test:cluster`. It is closed by default (issue 23 item 3): every published port binds to 127.0.0.1
 * unless KEEL_BIND / KEEL_MTLS_BIND open it, the database password comes from .env (`npm run compose:init`) with no
 * default, and profile `mtls` adds a frontend that requires client certificates.
 * With `docker compose` installed the file is also checked by `docker compose config`; without it (this project's CI
 * machine has docker but not the compose plugin) the YAML is parsed here, after the same `${VAR:-default}` /
 * `${VAR:?message}` interpolation compose applies.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TEMPORAL_SERVER_VERSION } from '../../scripts/cluster/provision.js';
import { BWRAP_NEEDS, containerSeccompProfile } from '../../activities/tools/builtin/container-seccomp.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FILE = `${ROOT}docker-compose.yml`;
const TEXT = readFileSync(FILE, 'utf8');
const MISSING_PASSWORD =
  'required variable POSTGRES_PASSWORD is missing a value: run npm run compose:init to write a random one to .env';

type Port = string | number | { host_ip?: string; published?: string | number; target: number };

interface Service {
  image?: string;
  profiles?: string[];
  ports?: Port[];
  environment?: Record<string, string>;
  volumes?: string[];
  security_opt?: string[];
}

interface Compose {
  services: Record<string, Service>;
}

/** Compose's interpolation of `$$`, `${VAR}`, `${VAR:-default}` and `${VAR:?message}` (the forms the file uses). */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}/g,
    (match, name: string, op?: string, arg?: string) => {
      if (match === '$$') return '$';
      const value = env[name];
      if (op === ':-') return value || (arg ?? '');
      if (op === ':?' && !value) throw new Error(`required variable ${name} is missing a value: ${arg}`);
      return value ?? '';
    },
  );
}

function load(env: Record<string, string>): Compose {
  return parse(interpolate(TEXT, env), { merge: true }) as Compose;
}

/** Every published port as `service host_ip:published->target`; a port without a host IP listens on every interface. */
function published(compose: Compose): string[] {
  return Object.entries(compose.services).flatMap(([name, s]) =>
    (s.ports ?? []).map((p) => {
      if (typeof p === 'object') return `${name} ${p.host_ip ?? '0.0.0.0'}:${p.published}->${p.target}`;
      const parts = String(p).split(':');
      const [ip, host, target] = parts.length === 3 ? parts : ['0.0.0.0', ...parts.slice(-2)];
      return `${name} ${ip}:${host}->${target}`;
    }),
  );
}

function images(compose: Compose): Record<string, string> {
  return Object.fromEntries(
    Object.entries(compose.services).flatMap(([name, s]) => (s.image ? [[name, s.image] as const] : [])),
  );
}

const EXPECTED = {
  postgresql: 'postgres:16',
  'temporal-schema': 'temporalio/admin-tools:1.32.0',
  temporal: 'temporalio/server:1.32.0',
  'keel-setup': 'temporalio/admin-tools:1.32.0',
  'temporal-ui': 'temporalio/ui:2.49.1',
  'temporal-mtls': 'temporalio/server:1.32.0',
};

const PASSWORD = { POSTGRES_PASSWORD: 'a1b2c3d4e5f6' };
const hasCompose = spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0;

describe('docker-compose.yml', () => {
  it('runs Temporal Server 1.32.0 and its admin tools, the server of the CLI dev server and of test:cluster', () => {
    expect(TEMPORAL_SERVER_VERSION).toBe('1.32.0');
    expect(images(load(PASSWORD))).toEqual(EXPECTED);
  });

  // issue 33 item 20: the UI had no codec endpoint line; the commented one, uncommented, points the UI at the codec
  // server its comment starts (keel codec-server's default address, the UI's origin allowed)
  it('the Web UI has a commented codec endpoint line with the keel codec-server command it needs', () => {
    const lines = TEXT.split('\n');
    const at = lines.indexOf('      # TEMPORAL_CODEC_ENDPOINT: http://localhost:8888');
    expect(lines.slice(at - 3, at)).toEqual([
      '      # encrypted runs (README "Reading encrypted runs: the codec server"): start a codec server on the host,',
      '      #   npx keel codec-server --encryption-keys keel-keys.json --origin http://localhost:8080',
      "      # and uncomment the next line; the browser calls it, so the address is the host's as the browser sees it",
    ]);
    const uncommented = parse(
      interpolate(TEXT.replace('# TEMPORAL_CODEC_ENDPOINT', 'TEMPORAL_CODEC_ENDPOINT'), PASSWORD),
    ) as Compose;
    expect(uncommented.services['temporal-ui']!.environment).toEqual({
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_CORS_ORIGINS: 'http://localhost:8080',
      TEMPORAL_CODEC_ENDPOINT: 'http://localhost:8888',
    });
  });

  it('publishes every port (profiles included) on 127.0.0.1 only, unless KEEL_BIND / KEEL_MTLS_BIND open it', () => {
    expect(published(load(PASSWORD))).toEqual([
      'temporal 127.0.0.1:7233->7233',
      'temporal-ui 127.0.0.1:8080->8080',
      'temporal-mtls 127.0.0.1:7234->7233',
    ]);
    // the deliberate opt-outs: KEEL_BIND opens the plaintext frontend and the UI, KEEL_MTLS_BIND the mTLS frontend
    expect(published(load({ ...PASSWORD, KEEL_BIND: '0.0.0.0' }))).toEqual([
      'temporal 0.0.0.0:7233->7233',
      'temporal-ui 0.0.0.0:8080->8080',
      'temporal-mtls 127.0.0.1:7234->7233',
    ]);
    expect(published(load({ ...PASSWORD, KEEL_MTLS_BIND: '0.0.0.0' }))).toEqual([
      'temporal 127.0.0.1:7233->7233',
      'temporal-ui 127.0.0.1:8080->8080',
      'temporal-mtls 0.0.0.0:7234->7233',
    ]);
  });

  it("the tools workers run under Keel's seccomp profile (the sandbox's list less what bubblewrap needs), never unconfined", () => {
    const compose = load(PASSWORD);
    const options = Object.entries(compose.services)
      .filter(([, s]) => s.security_opt)
      .map(([name, s]) => `${name} ${s.security_opt!.join(' ')}`);
    expect(options).toEqual(['keel-tools seccomp=./deploy/seccomp-bwrap.json apparmor=unconfined']);
    const profile = JSON.parse(readFileSync(`${ROOT}deploy/seccomp-bwrap.json`, 'utf8')) as unknown;
    expect(profile, 'deploy/seccomp-bwrap.json is stale: npm run gen-seccomp-profile').toEqual(
      containerSeccompProfile(),
    );
    const refused = containerSeccompProfile().syscalls[0]!.names;
    // refused to the container: the keyring, bpf, userfaultfd, io_uring, ptrace, modules, setns …
    for (const name of ['setns', 'keyctl', 'add_key', 'request_key', 'bpf', 'userfaultfd', 'kexec_load', 'init_module'])
      expect(refused, name).toContain(name);
    // … but not what bubblewrap needs to build the sandbox (refused again to the tools by the sandbox's own filter)
    for (const name of BWRAP_NEEDS) expect(refused, name).not.toContain(name);
  });

  it('commits no database password: without POSTGRES_PASSWORD it refuses and says how to set it', () => {
    expect(TEXT).not.toMatch(/(PASSWORD|PWD):\s*['"]?temporal/);
    expect(() => load({})).toThrow(MISSING_PASSWORD);
    const compose = load(PASSWORD);
    const passwords = Object.entries(compose.services).flatMap(([name, s]) =>
      Object.entries(s.environment ?? {})
        .filter(([key]) => /PASSWORD|PWD/.test(key) && !key.endsWith('_FILE'))
        .map(([key, value]) => `${name} ${key}=${value}`),
    );
    expect(passwords).toEqual([
      'postgresql POSTGRES_PASSWORD=a1b2c3d4e5f6',
      'temporal-schema POSTGRES_PWD=a1b2c3d4e5f6',
      'temporal-schema SQL_PASSWORD=a1b2c3d4e5f6',
      'temporal POSTGRES_PWD=a1b2c3d4e5f6',
      'temporal-mtls POSTGRES_PWD=a1b2c3d4e5f6',
    ]);
  });

  describe('npm run compose:init', () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-compose-init-'));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    const init = (...args: string[]) =>
      execFileSync(process.execPath, ['--import', 'tsx', 'scripts/compose-init.ts', '--root', root, ...args], {
        cwd: ROOT,
        encoding: 'utf8',
      });

    it('writes .env (0600) with a random password, kept on a second run, and the PKI the mtls profile mounts', () => {
      const first = init('--tls');
      expect(first).toContain('.env: POSTGRES_PASSWORD set to a random value (48 hex digits)\n');
      const env = readFileSync(join(root, '.env'), 'utf8');
      expect(env).toMatch(/^POSTGRES_PASSWORD=[0-9a-f]{48}\n$/);
      expect(first).not.toContain(env.slice('POSTGRES_PASSWORD='.length, -1));
      expect(statSync(join(root, '.env')).mode & 0o777).toBe(0o600);
      expect(init('--tls')).toContain('.env: POSTGRES_PASSWORD already set, kept\n');
      expect(readFileSync(join(root, '.env'), 'utf8')).toBe(env);

      // the mtls profile: frontend only, client certificates required, signed by the CA compose:init made
      const mtls = load(PASSWORD).services['temporal-mtls']!;
      expect(mtls.profiles).toEqual(['mtls']);
      expect(mtls.environment).toMatchObject({
        TEMPORAL_SERVICES: 'frontend',
        TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true',
        TEMPORAL_TLS_FRONTEND_CERT: '/etc/temporal/tls/server.pem',
        TEMPORAL_TLS_FRONTEND_KEY: '/etc/temporal/tls/server.key',
        TEMPORAL_TLS_CLIENT1_CA_CERT: '/etc/temporal/tls/ca.pem',
      });
      const mounts = (mtls.volumes ?? []).filter((v) => v.startsWith('./deploy/tls/')).map((v) => v.split(':')[0]!);
      expect(mounts).toEqual(['./deploy/tls/server.pem', './deploy/tls/server.key', './deploy/tls/ca.pem']);
      const tls = join(root, 'deploy', 'tls');
      const mode = (name: string) => statSync(join(tls, name)).mode & 0o777;
      expect([mode('.'), mode('ca.key'), mode('client.key'), mode('server.key')]).toEqual([0o700, 0o600, 0o600, 0o644]);
      const verify = (cert: string) =>
        execFileSync('openssl', ['verify', '-CAfile', join(tls, 'ca.pem'), join(tls, cert)], { encoding: 'utf8' });
      expect(verify('server.pem')).toBe(`${join(tls, 'server.pem')}: OK\n`);
      expect(verify('client.pem')).toBe(`${join(tls, 'client.pem')}: OK\n`);
    });
  });

  // skipped where the compose plugin is missing (`docker compose version` fails): the YAML tests above still run
  it.skipIf(!hasCompose)(
    'docker compose config resolves the same images, binds to 127.0.0.1 and refuses without a password (needs docker compose)',
    () => {
      const config = (env: Record<string, string>) =>
        // --env-file /dev/null: a .env of this checkout (npm run compose:init) must not supply the password
        spawnSync(
          'docker',
          ['compose', '--env-file', '/dev/null', '-f', FILE, '--profile', 'mtls', 'config', '--format', 'json'],
          { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } },
        );
      const ok = config(PASSWORD);
      expect(ok.status, ok.stderr).toBe(0);
      const compose = JSON.parse(ok.stdout) as Compose;
      expect(images(compose)).toEqual(EXPECTED);
      expect(published(compose).sort()).toEqual([
        'temporal 127.0.0.1:7233->7233',
        'temporal-mtls 127.0.0.1:7234->7233',
        'temporal-ui 127.0.0.1:8080->8080',
      ]);
      const refused = config({});
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain(MISSING_PASSWORD);
    },
  );
});
