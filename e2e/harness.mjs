// What the end-to-end tests share: named checks with a summary and an exit
// code, retries, `tally dev` started on free ports, and Debian's Chromium
// launched the way this machine allows (no background networking).

import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '..');
export const TALLY_BIN = process.env.TALLY_BIN ? path.resolve(process.env.TALLY_BIN) : path.join(repo, 'target/debug/tally');
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const TIMEOUT = 20_000;
export const run = promisify(execFile);
const started = Date.now();

// ---- named checks -----------------------------------------------------------
export const results = [];
export const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s]`, ...a);
export class Abort extends Error {}
/** Runs one named check; a failed `required` check ends the run (what
 *  follows depends on it). */
export async function check(name, fn, { required = false } = {}) {
  try {
    await fn();
    results.push({ name, ok: true });
    log(`ok   ${name}`);
  } catch (e) {
    results.push({ name, ok: false, error: e });
    log(`FAIL ${name}\n       ${String(e && e.message || e).split('\n').join('\n       ')}`);
    if (required) throw new Abort(`stopped: "${name}" failed and the rest depends on it`);
  }
}
export const sleep = ms => new Promise(r => setTimeout(r, ms));
/** Retries `fn` (an assertion) until it passes or `timeout` ms pass. */
export async function eventually(fn, timeout = 15_000, every = 150) {
  const end = Date.now() + timeout;
  for (;;) {
    try { return await fn(); } catch (e) {
      if (Date.now() > end) throw e;
      await sleep(every);
    }
  }
}

// ---- tally dev ----------------------------------------------------------------
let dev = null;
export let devLog = '';
export const dataDir = mkdtempSync(path.join(tmpdir(), 'tally-e2e-'));

/** Starts `tally dev` (in memory, free ports, `extraArgs` appended);
 *  resolves to its ready line's fields: http, dynamodb, table, site, key
 *  (and login, password with the demo owner). */
export function startTally(extraArgs = []) {
  return new Promise((resolve, reject) => {
    dev = spawn(TALLY_BIN, ['dev', '--memory', '--port', '0', '--dynamodb-port', '0', '--data-dir', dataDir, ...extraArgs], {
      cwd: repo, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`tally dev printed no ready line in 60 s:\n${devLog.slice(-2000)}`)), 60_000);
    dev.on('error', e => { clearTimeout(timer); reject(new Error(`cannot start ${TALLY_BIN}: ${e.message}`)); });
    dev.on('exit', code => { clearTimeout(timer); reject(new Error(`tally dev exited with ${code}:\n${devLog.slice(-2000)}`)); });
    dev.stderr.on('data', d => { devLog = (devLog + d).slice(-20_000); });
    dev.stdout.on('data', d => {
      out += d;
      const line = out.split('\n').find(l => l.startsWith('ready: '));
      if (!line) return;
      clearTimeout(timer);
      // ready: http=URL dynamodb=URL table=NAME site=demo key=KEY
      resolve(Object.fromEntries(line.slice(7).trim().split(/\s+/).map(kv => kv.split(/=(.*)/s).slice(0, 2))));
    });
  });
}
async function stopTally() {
  if (!dev || dev.exitCode !== null) return;
  dev.removeAllListeners('exit');
  const exited = new Promise(r => dev.once('exit', r));
  dev.kill('SIGINT');
  if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])) return;
  dev.kill('SIGKILL');
  await exited;
}

/** Waits past UTC midnight (the demo site's zone) when it is less than
 *  2 minutes away, so a test that reads "today" does not straddle it. */
export async function awayFromMidnight() {
  const toMidnight = 864e5 - (Date.now() % 864e5);
  if (toMidnight < 120_000) {
    log(`waiting ${Math.ceil(toMidnight / 1000)} s for the UTC day to turn`);
    await sleep(toMidnight + 2000);
  }
}
/** `GET {http}/api/sites/{site}/{pathAndQuery}` with the key; asserts 200,
 *  resolves to the body. */
export async function apiGetAs({ http, key, site = 'demo' }, pathAndQuery) {
  const res = await fetch(`${http}/api/sites/${site}/${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
/** Runs `tally <args>` against the table of `tally dev` (`ready`, what
 *  startTally resolved to); its stdout. */
export async function tallyCli(ready, args) {
  const { stdout } = await run(TALLY_BIN, [...args, '--dynamodb-endpoint', ready.dynamodb, '--table', ready.table], {
    env: { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: 'us-east-1' },
  });
  return stdout;
}

// ---- Chromium -----------------------------------------------------------------
/** Launches Chromium with a regular Chrome user agent: headless Chromium
 *  calls itself "HeadlessChrome", which Tally rightly drops as a bot. It is
 *  a launch flag (not a context option) so that the beacons Chromium sends
 *  while a page unloads carry it too. */
export async function launchChromium(extraArgs = []) {
  const { stdout: version } = await run(CHROMIUM, ['--version']).catch(() => ({ stdout: '' }));
  const major = (/(\d+)\.\d+\.\d+\.\d+/.exec(version) || [])[1] || '130';
  const ua = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.E2E_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', `--user-agent=${ua}`, ...extraArgs],
  });
}

// ---- scripted visits ----------------------------------------------------------
/** Plays one visit on `http`'s demo pages in its own browser context: the
 *  first page by URL, the others by the nav's links, each page view seen
 *  sent to /collect; then leaves for about:blank. No page errors. */
export async function playVisit(browser, http, pages) {
  const pathOf = u => new URL(u).pathname;
  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const sent = [];
  await ctx.route('https://example.org/**', r => r.abort());
  ctx.on('request', r => {
    if (r.method() === 'POST' && pathOf(r.url()) === '/collect') sent.push(JSON.parse(r.postData()));
  });
  const seen = p => eventually(() => {
    if (!sent.some(e => e.e === 'pageview' && pathOf(e.u) === p)) throw new Error(`no page view of ${p} yet`);
  }, TIMEOUT);
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  for (const [i, p] of pages.entries()) {
    if (i === 0) await page.goto(`${http}${p}`);
    else {
      await page.click(`nav a[href="${p}"]`);
      await page.waitForURL(`**${p}`);
    }
    await seen(p);
  }
  await page.goto('about:blank');
  if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
  await ctx.close();
}

// ---- the run ------------------------------------------------------------------
/** Runs `main`, always stops Chromium and `tally dev`, prints the summary
 *  and sets the exit code. */
export async function runTest(main, cleanup) {
  let fatal = null;
  try {
    await main();
  } catch (e) {
    fatal = e;
    if (e instanceof Abort) log(e.message);
    else {
      results.push({ name: 'test run', ok: false, error: e });
      log(`FAIL test run aborted: ${e && e.stack || e}`);
    }
  } finally {
    if (cleanup) await cleanup().catch(() => {});
    await stopTally();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const failed = results.filter(r => !r.ok);
  if (failed.length) {
    console.log('\nFailures:');
    for (const f of failed) console.log(`  - ${f.name}: ${String(f.error && f.error.message || f.error).split('\n')[0]}`);
    if (devLog && fatal) console.log(`\ntally dev's last log lines:\n${devLog.slice(-3000)}`);
  }
  console.log(`\nran in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`e2e: ${results.length - failed.length} passed, ${failed.length} failed`);
  process.exitCode = failed.length ? 1 : 0;
}
