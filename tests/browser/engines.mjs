// One small driver API over the three browser engines the package is tested in, each Debian's
// own build, with a fresh profile:
//   chromium  /usr/bin/chromium, through browser.mjs (playwright-core, CDP)
//   firefox   /usr/bin/firefox-esr, headless, through puppeteer-core (WebDriver BiDi)
//   webkit    WebKitWebDriver + MiniBrowser (WebKitGTK) on a private Xvfb display, through a
//             small W3C WebDriver client (fetch) below
// `const b = await openEngine('firefox')`: b.goto(url), b.evaluate(fn, arg) (fn runs in the page,
// may be async; its result comes back as JSON), b.setViewport(width, height), b.screenshot(name)
// (a full-page PNG in target/browser-artifacts/), b.errors() (console errors and uncaught
// exceptions of the pages so far), b.version, b.close().
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ROOT } from './golden.mjs';
import { CHROMIUM, launch } from './browser.mjs';

export const ARTIFACTS = join(ROOT, 'target/browser-artifacts');
export const FIREFOX = process.env.FIREFOX ?? '/usr/bin/firefox-esr';
export const WEBKIT_DRIVER = process.env.WEBKIT_DRIVER ?? '/usr/bin/WebKitWebDriver';
// Debian's webkit2gtk-driver runs the MiniBrowser of libwebkit2gtk-4.1-0.
export const MINIBROWSER = process.env.MINIBROWSER ?? ['/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/libexec/webkit2gtk-4.1/MiniBrowser'].find(existsSync) ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
export const XVFB = process.env.XVFB ?? '/usr/bin/Xvfb';

export const ENGINES = ['chromium', 'firefox', 'webkit'];

/** The binaries an engine needs that are missing here (empty when it can run). */
export function missing(engine) {
  const need = { chromium: [CHROMIUM], firefox: [FIREFOX], webkit: [WEBKIT_DRIVER, MINIBROWSER, XVFB] }[engine];
  return need.filter((f) => !existsSync(f));
}

/**
 * A page in a fresh browser of `engine`. Options: `viewport` ({ width, height }, default
 * 1280 x 900), `env` (extra environment for the browser, e.g. JSC_* options for WebKit).
 */
export async function openEngine(engine, { viewport = { width: 1280, height: 900 }, env = {}, popup = true } = {}) {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (engine === 'chromium') return chromiumDriver(viewport);
  if (engine === 'firefox') return firefoxDriver(viewport, env);
  if (engine === 'webkit') return webkitDriver(viewport, env, popup);
  throw new Error(`unknown engine ${engine}`);
}

const shot = (name) => join(ARTIFACTS, name.endsWith('.png') ? name : `${name}.png`);
const isError = (type) => type === 'error' || type === 'pageerror';

async function chromiumDriver(viewport) {
  const b = await launch({ viewport });
  const { page } = b;
  return {
    engine: 'chromium',
    version: b.context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1])),
    page,
    goto: (url) => page.goto(url).then(() => {}),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    setViewport: (width, height) => page.setViewportSize({ width, height }),
    screenshot: (name) => page.screenshot({ path: shot(name), fullPage: true }),
    errors: () => b.logs.filter((l) => /^\[(error|pageerror)\]/.test(l)),
    close: () => b.close(),
  };
}

async function firefoxDriver(viewport, env) {
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless: true,
    defaultViewport: viewport,
    env: { ...process.env, ...env },
    // No updates, telemetry or first-run pages; the rest are Firefox's defaults.
    extraPrefsFirefox: { 'app.update.enabled': false, 'datareporting.policy.dataSubmissionEnabled': false, 'browser.shell.checkDefaultBrowser': false },
  });
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  const logs = [];
  page.on('console', (m) => logs.push({ type: m.type(), text: m.text() }));
  page.on('pageerror', (e) => logs.push({ type: 'pageerror', text: e.message }));
  return {
    engine: 'firefox',
    version: (await browser.version()).replace(/^firefox\//, ''),
    page,
    goto: (url) => page.goto(url, { waitUntil: 'load' }).then(() => {}),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    setViewport: (width, height) => page.setViewport({ width, height }),
    screenshot: (name) => page.screenshot({ path: shot(name), fullPage: true }),
    errors: () => logs.filter((l) => isError(l.type)).map((l) => `[${l.type}] ${l.text}`),
    close: () => browser.close(),
  };
}

const freePort = () => new Promise((ok, err) => {
  const s = createServer();
  s.once('error', err);
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => ok(port));
  });
});

// Tall, for full-page screenshots of WebKit (see screenshot below).
const SCREEN = { width: 1920, height: 4000 };

/** Xvfb on a display of its own choosing (-displayfd): `{ display, stop }`. */
async function startXvfb() {
  const x = spawn(XVFB, ['-displayfd', '3', '-screen', '0', `${SCREEN.width}x${SCREEN.height}x24`, '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  x.stderr.on('data', (d) => (stderr += d));
  const display = await new Promise((ok, err) => {
    let out = '';
    x.stdio[3].on('data', (d) => {
      out += d;
      if (out.includes('\n')) ok(`:${out.trim()}`);
    });
    x.once('exit', (code) => err(new Error(`Xvfb exited (${code}): ${stderr}`)));
  });
  return { display, stop: () => x.kill() };
}

/**
 * An in-page console hook for engines whose driver reports no console messages (WebKit's W3C
 * WebDriver): scripts/serve.mjs puts it first in every HTML page's head (`headScript`), and
 * `errors()` reads what it kept.
 */
export const CONSOLE_HOOK = `(() => {
  const kept = (self.__webertErrors = []);
  const text = (a) => (a instanceof Error ? a.stack || a.message : typeof a === 'object' ? JSON.stringify(a) : String(a));
  const error = console.error.bind(console);
  console.error = (...a) => { kept.push('[error] ' + a.map(text).join(' ')); error(...a); };
  addEventListener('error', (e) => kept.push('[pageerror] ' + (e.error?.message ?? e.message)));
  addEventListener('unhandledrejection', (e) => kept.push('[pageerror] ' + text(e.reason)));
})();`;

async function webkitDriver(viewport, env, popup) {
  const x = await startXvfb();
  const port = await freePort();
  const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`], { env: { ...process.env, ...env, DISPLAY: x.display }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  driver.stdout.on('data', (d) => (output += d));
  driver.stderr.on('data', (d) => (output += d));
  const base = `http://127.0.0.1:${port}`;
  const stop = () => {
    driver.kill();
    x.stop();
  };
  const request = async (method, path, body) => {
    for (let i = 0; ; i++) {
      let res;
      try {
        res = await fetch(base + path, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
      } catch (e) {
        if (i < 100 && e.cause?.code === 'ECONNREFUSED') {
          await new Promise((ok) => setTimeout(ok, 100));
          continue;
        }
        throw e;
      }
      const json = await res.json();
      if (!res.ok) throw new Error(`WebKitWebDriver ${method} ${path}: ${json.value?.error}: ${json.value?.message}`);
      return json.value;
    }
  };
  let sid;
  try {
    const session = await request('POST', '/session', {
      capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation', '--javascript-can-open-windows-automatically=true'] } } },
    });
    sid = session.sessionId;
    const s = (path) => `/session/${sid}${path}`;
    await request('POST', s('/timeouts'), { script: 600_000, pageLoad: 120_000 });
    // MiniBrowser's window has a toolbar no narrower than 447 px; a popup has none and takes any
    // size, its viewport the window's. The test runs in one, the first window closed.
    const first = await request('GET', s('/window'));
    if (popup) {
      await request('POST', s('/execute/sync'), { script: 'window.open("about:blank", "webert", `popup,width=${arguments[0]},height=${arguments[1]}`)', args: [viewport.width, viewport.height] });
      let handles = [];
      for (let i = 0; i < 50 && handles.length < 2; i++, await new Promise((ok) => setTimeout(ok, 100))) handles = await request('GET', s('/window/handles'));
      await request('DELETE', s('/window'));
      await request('POST', s('/window'), { handle: handles.find((h) => h !== first) });
    }
    let hooked = [];
    const current = () => request('POST', s('/execute/sync'), { script: 'return self.__webertErrors ?? []', args: [] }).catch(() => []);
    const driverApi = {
      engine: 'webkit',
      version: session.capabilities.browserVersion,
      goto: async (url) => {
        hooked.push(...(await current()));
        await request('POST', s('/url'), { url });
      },
      evaluate: async (fn, arg) => {
        const script = `const done = arguments[arguments.length - 1];
Promise.resolve().then(() => (${fn})(arguments[0])).then(
  (value) => done({ value: value === undefined ? null : JSON.parse(JSON.stringify(value)) }),
  (e) => done({ error: String(e && e.message || e), stack: String(e && e.stack || '') }));`;
        const r = await request('POST', s('/execute/async'), { script, args: [arg ?? null] });
        if (r?.error !== undefined) throw new Error(`in the page: ${r.error}\n${r.stack}`);
        return r?.value;
      },
      setViewport: async (width, height) => {
        // The popup's viewport is its window; check, as the layout tests depend on it. Under Xvfb
        // the resize lands asynchronously (a configure event), at times after the request returns:
        // wait for it, asking again now and then.
        let got;
        for (let i = 0; i < 50; i++) {
          if (i % 10 === 0) await request('POST', s('/window/rect'), { width, height });
          got = await request('POST', s('/execute/sync'), { script: 'return [innerWidth, innerHeight]', args: [] });
          if (got[0] === width) return;
          await new Promise((ok) => setTimeout(ok, 100));
        }
        throw new Error(`WebKit: asked for a ${width} px wide viewport, got ${got[0]} after 5 s`);
      },
      screenshot: async (name) => {
        // WebKit's screenshots stop at the viewport: the window grows to the page's height for
        // it (up to the Xvfb screen's), then goes back.
        const rect = await request('GET', s('/window/rect'));
        const tall = await request('POST', s('/execute/sync'), { script: 'return document.documentElement.scrollHeight', args: [] });
        if (tall > rect.height) await request('POST', s('/window/rect'), { width: rect.width, height: Math.min(tall, SCREEN.height) });
        try {
          const png = await request('GET', s('/screenshot'));
          writeFileSync(shot(name), Buffer.from(png, 'base64'));
        } finally {
          if (tall > rect.height) await request('POST', s('/window/rect'), { width: rect.width, height: rect.height });
        }
      },
      errors: async () => [...hooked, ...(await current())],
      close: async () => {
        await request('DELETE', `/session/${sid}`).catch(() => {});
        stop();
      },
      output: () => output,
    };
    return driverApi;
  } catch (e) {
    if (sid) await request('DELETE', `/session/${sid}`).catch(() => {});
    stop();
    throw new Error(`${e.message}\n${output}`);
  }
}
