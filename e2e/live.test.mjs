#!/usr/bin/env node
// The live view follows tabs (issue 22, item 2), in Chromium: the demo page
// open in one browser is one current visitor on the dashboard (open in
// another); hidden, its tracker sends a `leave` and the dashboard's badge
// (polled every 10 s) drops to 0 within ~10 s; shown again, it sends one
// `show` and the badge is back to 1. Each step is one stored event (ingest's
// counters): page view, leave, show.
//
// Headless Chromium never hides a page: minimising its window
// (Browser.setWindowBounds), freezing it (Page.setWebLifecycleState),
// bringing another tab of the same window to the front, or a new target in
// that window all leave `document.visibilityState` "visible" (tried with
// Chromium 156). So the hide is the page's own view of it: visibilityState
// and hidden redefined and `visibilitychange` dispatched, the event a real
// hide fires; the tracker, its beacons, ingest, the realtime read and the
// dashboard are the real ones.
//
//   node e2e/live.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, runTest, sleep, startTally,
} from './harness.mjs';

let browser;
/** The most a change may take to show on the badge: one 10 s poll, the
 *  beacon's delivery and the read. */
const LIVE_MS = 12_000;

async function main() {
  log(`tally: ${TALLY_BIN}`);
  const { http, key } = await startTally();
  const realtime = async () => {
    const res = await fetch(`${http}/api/sites/demo/realtime`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    return res.json();
  };
  const counters = async () => (await (await fetch(`${http}/health`)).json()).counters;
  browser = await launchChromium();

  const before = await realtime();
  await check('nobody is on the demo site before the test', () => assert.equal(before.visitors, 0, JSON.stringify(before)),
    { required: true });

  // ---- the visitor's tab ----
  const visitor = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  visitor.setDefaultTimeout(TIMEOUT);
  const sent = [];
  // A route makes Playwright report sendBeacon bodies.
  await visitor.route('https://example.org/**', r => r.abort());
  visitor.on('request', r => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/collect') sent.push(JSON.parse(r.postData()));
  });
  const seen = (e, n) => eventually(() => assert.equal(sent.filter(s => s.e === e).length, n, `${e} beacons`), TIMEOUT);
  const demo = await visitor.newPage();
  const setHidden = hidden => demo.evaluate(h => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
  await demo.goto(`${http}/demo`);
  await seen('pageview', 1);

  // ---- the dashboard, in another window ----
  const dashCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  dashCtx.setDefaultTimeout(TIMEOUT);
  const dash = await dashCtx.newPage();
  const polls = [];
  dash.on('request', r => { if (r.url().endsWith('/realtime')) polls.push(Date.now()); });
  await dash.goto(`${http}/`);
  await dash.fill('[data-testid="key-input"]', key);
  await dash.click('[data-testid="key-submit"]');
  await dash.waitForSelector('#app:not([hidden])');
  const badge = () => dash.getAttribute('[data-testid="realtime"]', 'data-value');
  /** Waits for the badge to say `n`; resolves to the ms it took from `since`. */
  const badgeSays = async (n, since) => {
    await eventually(async () => assert.equal(await badge(), String(n)), LIVE_MS + 5_000, 100);
    return Date.now() - since;
  };

  await check('the open demo page is 1 current visitor on the dashboard', async () => {
    await badgeSays(1, Date.now());
    assert.match(await dash.textContent('[data-testid="realtime"]'), /^\s*1 current visitor\s*$/);
  }, { required: true });

  await check(`hidden, the tab sends one leave and leaves the live count within ${LIVE_MS / 1000} s`, async () => {
    const t = Date.now();
    await setHidden(true);
    await seen('leave', 1);
    assert.equal(sent.filter(s => s.e === 'engagement').length, 0, 'the hide beacon is the leave');
    const took = await badgeSays(0, t);
    log(`   the badge said 0 after ${(took / 1000).toFixed(1)} s`);
    assert.ok(took <= LIVE_MS, `took ${took} ms`);
    assert.equal((await realtime()).visitors, 0);
    assert.match(await dash.textContent('[data-testid="realtime"]'), /^\s*0 current visitors\s*$/);
  });

  await check('a second hide signal (pagehide after visibilitychange) sends nothing more', async () => {
    await demo.evaluate(() => window.dispatchEvent(new Event('pagehide')));
    await sleep(500);
    assert.equal(sent.filter(s => s.e === 'leave').length, 1);
  });

  await check(`shown again, it sends one show and is back within ${LIVE_MS / 1000} s`, async () => {
    const t = Date.now();
    await setHidden(false);
    await seen('show', 1);
    const took = await badgeSays(1, t);
    log(`   the badge said 1 after ${(took / 1000).toFixed(1)} s`);
    assert.ok(took <= LIVE_MS, `took ${took} ms`);
    const now = await realtime();
    assert.equal(now.visitors, 1);
    assert.deepEqual(now.pages, [{ value: '/demo', visitors: 1 }]);
  });

  await check('the dashboard polls realtime about every 10 s', () => {
    const gaps = polls.slice(1).map((t, i) => t - polls[i]).filter(g => g > 1_000);
    assert.ok(gaps.length >= 1, `${polls.length} polls`);
    for (const g of gaps) assert.ok(g >= 9_000 && g <= 11_500, `a gap of ${g} ms`);
  });

  await check('the visit so far is three writes: page view, leave, show (ingest counters)', async () => {
    const end = await eventually(async () => {
      const c = await counters();
      assert.equal(c.accepted, 3);
      return c;
    });
    assert.deepEqual({ dropped: end.dropped, rejected: end.rejected, failed: end.failed, duplicates: end.duplicates },
      { dropped: 0, rejected: 0, failed: 0, duplicates: 0 });
    assert.deepEqual(sent.map(s => s.e), ['pageview', 'leave', 'show']);
  });
}

await runTest(main, async () => { if (browser) await browser.close(); });
