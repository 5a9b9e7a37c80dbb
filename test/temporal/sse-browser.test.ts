/**
 * examples/sse-server.ts in a real browser: headless Chromium loads examples/sse-page.html, starts a run, sees its
 * text stream in, reloads mid-stream and resumes after the last offset it applied (no duplicated or missing text).
 * Skipped, saying so, on a machine without Chromium unless CI=true (test/temporal/ui-browser.test.ts).
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSseServer } from '../../examples/sse-server.js';
import { startKeel, type Keel } from './harness.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs Chromium at ${CHROMIUM} (.ci/run installs Debian's chromium)`);

const REPLY = Array.from({ length: 40 }, (_, i) => `w${String(i).padStart(3, '0')} `).join('');

describe.skipIf(!available)(`examples/sse-server.ts in Chromium (needs Chromium at ${CHROMIUM})`, () => {
  let keel: Keel;
  let server: Server;
  let browser: Browser;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { sse: { rules: [{ text: REPLY, chunkDelayMs: 100 }] } } });
    server = createSseServer(keel.client, { model: 'scripted/sse', tools: [] });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await keel?.stop();
  });

  it('streams the reply into the page; a reload mid-stream resumes after the last offset, without duplicates', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const page = await browser.newPage();
    const streams: string[] = [];
    page.on('request', (r) => r.url().includes('/events') && streams.push(new URL(r.url()).searchParams.get('from')!));
    await page.goto(url);
    await page.fill('#prompt', 'tell me');
    await page.click('#start button');
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
    expect(streams[0]).toBe('0');
    expect(Number(streams[1])).toBeGreaterThan(0); // the reload resumed, it did not start over
    const workflowId = await page.evaluate(() => JSON.parse(sessionStorage.getItem('keel-run')!).workflowId as string);
    await keel.client.getHandle(workflowId).cancel();
  });
});
