// What the bench scripts share: their command-line options, the pages they serve and a headless
// Chromium (tests/browser/browser.mjs; more flags in CHROMIUM_FLAGS).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, '../..');

export const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
export const flag = (name) => process.argv.includes(`--${name}`);

// The benchmark page, webert's package and the model folders (for scripts/serve.mjs).
export const webertMounts = () => ({
  '/': join(here, 'page'),
  '/pkg/': process.env.WEBERT_PKG ?? join(root, 'www/pkg'),
  '/models/': join(root, 'models'),
});

// Chromium as the browser tests launch it (their node_modules hold playwright-core too).
export { launch } from '../browser/browser.mjs';
