/**
 * docs/architecture.md#visibility as an operator sees it: headless Chromium opens the Temporal Web UI page of a finished run and finds its
 * static summary. The screenshot is kept in test/artifacts/ (git-ignored). `.ci/run` installs Debian's chromium; on a
 * machine without it the test is skipped, saying so, unless CI=true, where it must run.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../activities/model/scripted.js';
import { AgentClient } from '../../client/agent-client.js';
import { startDevServer, type DevServer } from '../../dev/dev-server.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { Client, Connection } from '@temporalio/client';
import { createCodecServer, type CodecServer } from '../../client/codec-server.js';
import { EncryptionCodec, newKeyRingJson, parseKeyRing } from '../../node-common/encryption.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`);

describe.skipIf(!available)(`the run in the Temporal Web UI (needs Chromium at ${CHROMIUM})`, () => {
  let server: DevServer;
  let worker: AgentWorker;
  let client: AgentClient;
  let browser: Browser;
  beforeAll(async () => {
    server = await startDevServer({ ui: true, uiPort: 18233 + Math.floor(Math.random() * 1000), log: () => {} });
    worker = await createAgentWorker({
      address: server.address,
      taskQueue: 'ui',
      models: { scripted: scriptedModel({ ui: { rules: [{ text: 'All done.' }] } }) },
    });
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

  it('shows the static summary, static details, current details and activity summaries of a finished run', async () => {
    const run = await client.start({ model: 'scripted/ui', prompt: 'Summarise the quarterly report\nwith details' });
    expect((await run.result()).status).toBe('completed');
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${run.workflowId}`);
    await page.getByText(run.workflowId).first().waitFor({ timeout: 30_000 });
    // the prompt is also in the Input panel: read the User Metadata tab, whose markdown the UI renders in iframes
    await page.getByText('User Metadata', { exact: true }).first().click();
    const shown = async () => {
      const texts = await Promise.all(
        page.frames().map((f) =>
          f
            .locator('body')
            .innerText()
            .catch(() => ''),
        ),
      );
      // paragraphs: the UI of CLI 1.9.1 separates them by more blank lines than earlier UIs did
      return texts.map((t) => t.trim().replace(/\n{2,}/g, '\n\n'));
    };
    const expected = [
      'Summarise the quarterly report', // static summary: the prompt's first line
      'model: scripted/ui\n\ntools: (none)\n\nmode: task', // static details
      'completed · turn 1 · 2 messages\n\nusage: 0 tokens · $0.0000\n\nlast reply: All done.', // current details
    ];
    const deadline = Date.now() + 30_000;
    let texts = await shown();
    while (!expected.every((e) => texts.includes(e)) && Date.now() < deadline) {
      await page.waitForTimeout(250);
      texts = await shown();
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}ui-workflow-page.png`, fullPage: true });
    for (const e of expected) expect(texts).toContain(e);
    // activity summaries, listed with the events (the Event History tab in the UI of CLI 1.9.1)
    await page
      .getByText(/^Event History/)
      .first()
      .click();
    await page.getByText('check run input').first().waitFor({ timeout: 30_000 });
  });
});

/** The text of every frame of the page (the UI renders some panels in iframes). */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page.frames().map((f) =>
      f
        .locator('body')
        .innerText()
        .catch(() => ''),
    ),
  );
  return texts.join('\n');
}

describe.skipIf(!available)(
  `a sealed run in the Web UI through keel's codec server (needs Chromium at ${CHROMIUM})`,
  () => {
    const PROMPT = 'Draft the orchid-7741 board memo';
    const ring = parseKeyRing(newKeyRingJson('k-ui'), 'test');
    let server: DevServer;
    let codec: CodecServer;
    let worker: AgentWorker;
    let client: AgentClient;
    let browser: Browser;
    let workflowId: string;
    beforeAll(async () => {
      const uiPort = 19233 + Math.floor(Math.random() * 1000);
      // the UI at http://127.0.0.1:<uiPort> calls the codec server from the browser: a cross-origin request
      codec = await createCodecServer({
        keyRing: ring,
        port: 0,
        origins: [`http://127.0.0.1:${uiPort}`],
        insecureNoAuth: true,
      });
      server = await startDevServer({ ui: true, uiPort, uiCodecEndpoint: codec.url, log: () => {} });
      worker = await createAgentWorker({
        address: server.address,
        taskQueue: 'ui-sealed',
        models: { scripted: scriptedModel({ ui: { rules: [{ text: 'Memo drafted.' }] } }) },
        encryption: { keyRing: ring },
      });
      void worker.run();
      const connection = await Connection.connect({ address: server.address });
      client = new AgentClient(
        new Client({ connection, dataConverter: { payloadCodecs: [new EncryptionCodec(ring)] } }),
        'ui-sealed',
      );
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
      const run = await client.start({ model: 'scripted/ui', prompt: PROMPT });
      workflowId = run.workflowId;
      expect((await run.result()).status).toBe('completed');
    });
    afterAll(async () => {
      await browser?.close();
      await client?.client.connection.close();
      await worker?.shutdown();
      await server?.shutdown();
      await codec?.close();
    });

    it('shows the decoded prompt with the codec server, and not without it', async () => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${server.uiUrl}/namespaces/default/workflows/${workflowId}`);
      await page.getByText(workflowId).first().waitFor({ timeout: 30_000 });
      await expect.poll(() => pageText(page), { timeout: 30_000, interval: 250 }).toContain(PROMPT);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}ui-sealed-decoded.png`, fullPage: true });
      await page.close();

      // the codec server gone, the same page only has what Temporal stores: ciphertext
      await codec.close();
      const blind = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await blind.goto(`${server.uiUrl}/namespaces/default/workflows/${workflowId}`);
      await blind.getByText(workflowId).first().waitFor({ timeout: 30_000 });
      // the Input panel shows the stored payload: encoding binary/encrypted (base64, as the UI prints it), ciphertext
      const sealedEncoding = Buffer.from('binary/encrypted').toString('base64');
      await expect.poll(() => pageText(blind), { timeout: 30_000, interval: 250 }).toContain(sealedEncoding);
      await blind.screenshot({ path: `${ARTIFACTS}ui-sealed-blind.png`, fullPage: true });
      expect(await pageText(blind)).toContain('Codec Server could not connect');
      expect(await pageText(blind)).not.toContain(PROMPT);
    });
  },
);
