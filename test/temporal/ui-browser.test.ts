/**
 * keel.md §5 as an operator sees it: headless Chromium opens the Temporal Web UI page of a finished run and finds its
 * static summary. The screenshot is kept in test/artifacts/ (git-ignored). `.ci/run` installs Debian's chromium; on a
 * machine without it the test is skipped, saying so, unless CI=true, where it must run.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../activities/model/scripted.js';
import { AgentClient } from '../../client/agent-client.js';
import { startDevServer, type DevServer } from '../../client/dev-server.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') throw new Error(`CI needs Chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`);

describe.skipIf(!available)(`the run in the Temporal Web UI (needs Chromium at ${CHROMIUM})`, () => {
  let server: DevServer;
  let worker: AgentWorker;
  let client: AgentClient;
  let browser: Browser;
  beforeAll(async () => {
    server = await startDevServer({ ui: true, uiPort: 18233 + Math.floor(Math.random() * 1000), log: () => {} });
    worker = await createAgentWorker({ address: server.address, taskQueue: 'ui', models: { scripted: scriptedModel({ ui: { rules: [{ text: 'All done.' }] } }) } });
    void worker.run();
    client = await AgentClient.connect({ address: server.address, taskQueue: 'ui' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await client?.close();
    await worker?.shutdown();
    await server?.shutdown();
  });

  it('shows the static summary of a finished run on its workflow page', async () => {
    const run = await client.start({ model: 'scripted/ui', prompt: 'Summarise the quarterly report\nwith details' });
    expect((await run.result()).status).toBe('completed');
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${run.workflowId}`);
    await page.getByText('Summarise the quarterly report').first().waitFor({ timeout: 30_000 });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}ui-workflow-page.png`, fullPage: true });
    expect(await page.getByText(run.workflowId).count()).toBeGreaterThan(0);
  });
});
