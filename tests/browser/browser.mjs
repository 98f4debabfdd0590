// Debian's Chromium, headless, driven by playwright-core, with a fresh profile each time.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** A persistent context (service workers and the Cache API behave as for a real user); more
 * Chromium flags in `args` and in the CHROMIUM_FLAGS environment variable. */
export async function launch({ webgpu = true, viewport = { width: 1100, height: 900 }, args: extra = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'webert-chromium-'));
  const args = [
    '--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic', '--disable-dev-shm-usage',
    ...extra, ...(process.env.CHROMIUM_FLAGS ?? '').split(' ').filter(Boolean),
  ];
  if (webgpu) args.push('--enable-unsafe-webgpu');
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    ignoreDefaultArgs: ['--headless'],
    args,
    viewport,
  });
  const logs = [];
  context.on('page', (p) => watch(p, logs));
  for (const p of context.pages()) watch(p, logs);
  return {
    context,
    logs,
    page: context.pages()[0] ?? (await context.newPage()),
    close: async () => {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function watch(page, logs) {
  page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
}
