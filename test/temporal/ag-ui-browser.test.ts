/**
 * examples/ag-ui-server.ts in a real browser: headless Chromium loads examples/ag-ui-page.html, which talks AG-UI with
 * `@ag-ui/client` (bundled by the server): a reply streams in, a reload mid-stream reconnects after the last offset
 * applied (no duplicated or missing text), and an approval interrupt's button runs the call once.
 * Skipped, saying so, on a machine without Chromium unless CI=true (test/temporal/ui-browser.test.ts).
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAgUiServer } from '../../examples/ag-ui-server.js';
import { dangerTool, ranLog } from './approval-fixtures.js';
import { startKeel, type Keel } from './harness.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`);

const REPLY = Array.from({ length: 40 }, (_, i) => `w${String(i).padStart(3, '0')} `).join('');

describe.skipIf(!available)(`examples/ag-ui-server.ts in Chromium (needs Chromium at ${CHROMIUM})`, () => {
  let keel: Keel;
  let server: Server;
  let browser: Browser;
  const { ran, note } = ranLog();
  beforeAll(async () => {
    keel = await startKeel({
      tools: [dangerTool(note)],
      scripts: {
        web: {
          rules: [
            { match: 'toolResult:danger', text: 'deployed' },
            { match: 'deploy', toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'prod' } }] },
            { text: REPLY, chunkDelayMs: 100 },
          ],
        },
      },
    });
    server = await createAgUiServer({ client: keel.client, runInput: { model: 'scripted/web', tools: ['danger'] } });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await keel?.stop();
  });

  it('streams the reply in; a reload mid-stream resumes after the last offset, without duplicates; approve runs the call once', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const page = await browser.newPage();
    const posts: unknown[] = [];
    page.on('request', (r) => r.url().endsWith('/agui') && posts.push(JSON.parse(r.postData() ?? 'null')));
    await page.goto(url);
    await page.fill('#prompt', 'tell me');
    await page.click('#send button');
    // some text streamed in, not all of it
    await vi.waitFor(
      async () => {
        const t = (await page.locator('.assistant').first().textContent({ timeout: 1000 })) ?? '';
        expect(t.length).toBeGreaterThanOrEqual(16);
        expect(t.length).toBeLessThan(REPLY.length);
      },
      { timeout: 30_000, interval: 20 },
    );
    await page.reload();
    await page.getByText('waiting for a follow-up').waitFor({ timeout: 30_000 });
    expect(await page.locator('.assistant').allTextContents()).toEqual([REPLY]);
    expect(await page.locator('.user').allTextContents()).toEqual(['tell me']);
    const from = (p: unknown) => (p as { forwardedProps?: { keel?: { from?: number } } }).forwardedProps?.keel?.from;
    expect(from(posts[0])).toBeUndefined();
    expect(from(posts[1])).toBeGreaterThan(0); // the reload resumed, it did not start over

    await page.fill('#prompt', 'deploy it');
    await page.click('#send button');
    await page.getByText('waiting for approval').waitFor({ timeout: 30_000 });
    const threadId = await page.evaluate(() => JSON.parse(sessionStorage.getItem('keel-ag-ui')!).threadId as string);
    expect(ran.get(threadId)).toBeUndefined();
    await page.click('#approvals button:text("approve")');
    await page.getByText('waiting for a follow-up').waitFor({ timeout: 30_000 });
    expect(await page.locator('.assistant').allTextContents()).toEqual([REPLY, 'deployed']);
    expect(await page.locator('.tool').allTextContents()).toEqual(['danger {"target":"prod"}', '→ did prod']);
    expect(ran.get(threadId)).toEqual(['danger prod']);
    await keel.client.getHandle(threadId).cancel();
  });
});
