/**
 * docker-compose.yml runs the Temporal Server the README's upgrade path needs (issue 20 item 9): upgrade on
 * continue-as-new (idle sessions moving to a new build) needs Temporal Server 1.32, the server of Temporal CLI 1.9.1
 * and of `npm run test:cluster`. With `docker compose` installed the file is also checked by `docker compose config`;
 * without it (this project's CI machine has docker but not the compose plugin) the YAML is parsed here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TEMPORAL_SERVER_VERSION } from '../../scripts/cluster/provision.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FILE = `${ROOT}docker-compose.yml`;

interface Compose {
  services: Record<string, { image?: string }>;
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
};

const hasCompose = spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0;

describe('docker-compose.yml', () => {
  it('runs Temporal Server 1.32.0 and its admin tools, the server of the CLI dev server and of test:cluster', () => {
    expect(TEMPORAL_SERVER_VERSION).toBe('1.32.0');
    expect(images(parse(readFileSync(FILE, 'utf8')) as Compose)).toEqual(EXPECTED);
  });

  // skipped where the compose plugin is missing (`docker compose version` fails): the YAML test above still runs
  it.skipIf(!hasCompose)(
    'docker compose config accepts the file and resolves the same images (needs docker compose)',
    () => {
      const out = execFileSync('docker', ['compose', '-f', FILE, 'config', '--format', 'json'], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      expect(images(JSON.parse(out) as Compose)).toEqual(EXPECTED);
    },
  );
});
