#!/usr/bin/env node
// Bots blocked (issue 24, item 1), in Chromium against `tally dev` with
// every bot signal on (as deployed): a person's visit in the browser is
// counted; then bots are posted to /collect with a known count per reason
// and each is answered "dropped" with its reason:
//
//   user_agent  K posts with a crawler's agent (Googlebot)
//   datacenter  N posts with a browser's headers from hosting networks (AWS,
//               Hetzner: the client address as CloudFront names it, with
//               the origin secret, so tally dev runs with
//               TALLY_BEHIND_CLOUDFRONT=1 and TALLY_ORIGIN_SECRET)
//   headers     M posts from a desktop Chrome agent: no Accept-Language, a
//               HeadlessChrome client-hint brand, client hints under Firefox
//   rate        one visitor's 60 + R page views in one minute: 60 counted,
//               R dropped
//
// GET …/bots?period=today must count exactly K/N/M/R, /health's dropped
// counter the same total, and the stats only the browser's page views and
// the rate visitor's first 60. The dashboard's "Bots blocked" card shows the
// API's counts (also under a filter: they are site-wide); a shared link
// gets 403 not_shared from the API and no card. Writes
// docs/screenshots/dashboard-bots.png.
//
//   node e2e/bots.test.mjs

import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  TIMEOUT, TALLY_BIN, apiGetAs, awayFromMidnight, check, eventually, launchChromium, log, playVisit, repo, runTest,
  sleep, startTally, tallyCli,
} from './harness.mjs';

const SCREENSHOTS = process.env.E2E_SCREENSHOTS !== '0';
const SHOT_DIR = path.join(repo, 'docs/screenshots');

const CHROME_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const CHROME_WIN = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const CHROME_HINTS = '"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
// The origin secret tally dev is given: the datacenter bots' viewer
// address is trusted only with it, as behind the stack's CloudFront.
const ORIGIN_SECRET = 'e2e-origin-secret-0123456789abcdef01234567';
const viewer = address => ({ 'cloudfront-viewer-address': address, 'x-tally-origin-verify': ORIGIN_SECRET });
const browserHeaders = { 'user-agent': CHROME_WIN, 'accept-language': 'de-DE,de;q=0.9,en;q=0.8', 'sec-ch-ua': CHROME_HINTS, 'sec-ch-ua-mobile': '?0', 'sec-ch-ua-platform': '"Windows"' };

// The bots, by reason: [headers, expected /collect reason].
const BOTS = {
  user_agent: [
    [{ 'user-agent': GOOGLEBOT, 'accept-language': 'en' }, 'crawler'],
    [{ 'user-agent': GOOGLEBOT, 'accept-language': 'en' }, 'crawler'],
    [{ 'user-agent': GOOGLEBOT, 'accept-language': 'en' }, 'crawler'],
  ],
  datacenter: [
    [{ ...browserHeaders, ...viewer('52.95.110.1:41234') }, 'datacenter'],   // AWS
    [{ ...browserHeaders, ...viewer('52.95.110.1:41235') }, 'datacenter'],
    [{ ...browserHeaders, ...viewer('88.198.0.1:50000') }, 'datacenter'],    // Hetzner
    [{ ...browserHeaders, ...viewer('[2604:a880::1]:443') }, 'datacenter'], // DigitalOcean
  ],
  headers: [
    [{ 'user-agent': CHROME_LINUX }, 'headers'],                                            // no Accept-Language
    [{ 'user-agent': CHROME_LINUX }, 'headers'],
    [{ 'user-agent': CHROME_LINUX, 'accept-language': '' }, 'headers'],                     // a blank one
    [{ 'user-agent': CHROME_LINUX, 'accept-language': 'en', 'sec-ch-ua': '"HeadlessChrome";v="131", "Chromium";v="131"' }, 'headers'],
    [{ 'user-agent': FIREFOX, 'accept-language': 'en', 'sec-ch-ua': CHROME_HINTS }, 'headers'],
  ],
};
const RATE_LIMIT = 60;   // page views a minute per visitor (TALLY_BOT_RATE's default)
const RATE_OVER = 2;     // the flood's page views past it
const BROWSER_PAGES = ['/demo', '/demo/about', '/demo/pricing'];
const FLOOD_PAGE = '/demo/flood';
const want = {
  user_agent: BOTS.user_agent.length, datacenter: BOTS.datacenter.length, headers: BOTS.headers.length, rate: RATE_OVER,
};
const wantTotal = Object.values(want).reduce((a, b) => a + b, 0);

const browsers = [];
let ready, base, key;
const apiGet = q => apiGetAs(ready, q);
const counters = async () => (await (await fetch(`${base}/health`)).json()).counters;
/** The ingest counters once at least `accepted` more than `start` were
 *  accepted and nothing moved for 1.5 s. */
async function settled(start, accepted) {
  let last = '', since = Date.now();
  const end = Date.now() + TIMEOUT;
  for (;;) {
    const c = await counters();
    if (JSON.stringify(c) !== last) { last = JSON.stringify(c); since = Date.now(); }
    if (c.accepted - start.accepted >= accepted && Date.now() - since >= 1500) return c;
    if (Date.now() > end) throw new Error(`ingest counters did not settle: ${last}`);
    await sleep(200);
  }
}

/** POSTs a page view to /collect with exactly `headers` (node:http adds
 *  none of its own but host, content-type and length); its answer. */
function post(headers, pathname) {
  const rnd = () => Math.random().toString(36).slice(2, 14).padEnd(12, '0');
  const ts = Date.now();
  const body = JSON.stringify({ s: 'demo', sid: rnd(), e: 'pageview', p: {}, u: `http://localhost${pathname}`, r: '', t: 'demo', sw: 1440, sh: 900, tz: 'UTC', eid: rnd() + ts.toString(36), ts });
  const url = new URL('/collect', base);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'text/plain', ...headers } }, res => {
      let text = '';
      res.on('data', d => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  log(`tally: ${TALLY_BIN}`);
  await awayFromMidnight();
  // The datacenter bots name their address as CloudFront does (tally dev's
  // own source address is the loopback peer, never a hosting network).
  process.env.TALLY_BEHIND_CLOUDFRONT = '1';
  process.env.TALLY_ORIGIN_SECRET = ORIGIN_SECRET;
  ready = await startTally();
  ({ http: base, key } = ready);
  const browser = await launchChromium();
  browsers.push(browser);

  // ---- a person, in the browser ----
  const before = await counters();
  await check(`a visit in Chromium: ${BROWSER_PAGES.join(', ')}`, () => playVisit(browser, base, BROWSER_PAGES), { required: true });
  // Its page views and engagement beacons (the last one sent as the page
  // unloads, which Playwright does not see): wait until the counters settle.
  const person = await settled(before, BROWSER_PAGES.length);
  await check('the browser\'s page views are accepted, nothing of it dropped', () => {
    assert.ok(person.accepted - before.accepted >= BROWSER_PAGES.length, JSON.stringify(person));
    assert.equal(person.dropped, before.dropped, JSON.stringify(person));
  });

  // ---- the bots ----
  for (const [reason, list] of Object.entries(BOTS)) {
    await check(`${list.length} bots by ${reason}: each answered 202 dropped with its reason`, async () => {
      for (const [headers, why] of list) {
        const { status, json } = await post(headers, '/demo');
        assert.deepEqual([status, json.status, json.reason], [202, 'dropped', why], JSON.stringify(json));
      }
    });
  }
  await check(`one visitor's ${RATE_LIMIT + RATE_OVER} page views in a minute: ${RATE_LIMIT} accepted, ${RATE_OVER} dropped as rate`, async () => {
    // The limit counts per clock minute: start early in one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) {
      log(`   waiting ${Math.ceil((60_000 - intoMinute) / 1000)} s for the next minute`);
      await sleep(60_000 - intoMinute + 500);
    }
    const started = Date.now();
    const answers = [];
    for (let i = 0; i < RATE_LIMIT + RATE_OVER; i++) answers.push((await post(browserHeaders, FLOOD_PAGE)).json);
    assert.equal(Math.floor(started / 60_000), Math.floor(Date.now() / 60_000), 'the flood stayed in one minute');
    assert.deepEqual(answers.slice(0, RATE_LIMIT).map(a => a.status), Array(RATE_LIMIT).fill('accepted'));
    assert.deepEqual(answers.slice(RATE_LIMIT).map(a => [a.status, a.reason]), Array(RATE_OVER).fill(['dropped', 'rate']));
  }, { required: true });

  // ---- the counts ----
  let bots;
  await check(`GET bots?period=today: user_agent ${want.user_agent}, datacenter ${want.datacenter}, headers ${want.headers}, rate ${want.rate}, total ${wantTotal}`, async () => {
    bots = await apiGet('bots?period=today');
    assert.deepEqual(bots.reasons, want);
    assert.equal(bots.total, wantTotal);
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual([bots.from, bots.to], [today, today]);
    assert.deepEqual(bots.days, [{ date: today, total: wantTotal, reasons: want }]);
  }, { required: true });
  await check('/health: since the visit, dropped grew by exactly the bots sent and accepted by the rate visitor\'s first 60', async () => {
    const c = await counters();
    assert.equal(c.dropped - person.dropped, wantTotal, JSON.stringify(c));
    assert.equal(c.accepted - person.accepted, RATE_LIMIT, JSON.stringify(c));
  });
  await check('stats and pages count the browser\'s page views and the rate visitor\'s 60, no bot', async () => {
    const stats = await apiGet('stats?period=today');
    assert.deepEqual([stats.results.visitors, stats.results.pageviews], [2, BROWSER_PAGES.length + RATE_LIMIT], JSON.stringify(stats.results));
    const pages = await apiGet('breakdown/page?period=today&limit=10');
    const got = Object.fromEntries(pages.results.map(r => [r.value, [r.visitors, r.pageviews]]));
    assert.deepEqual(got, { ...Object.fromEntries(BROWSER_PAGES.map(p => [p, [1, 1]])), [FLOOD_PAGE]: [1, RATE_LIMIT] });
    const person = await apiGet(`stats?period=today&filters=${encodeURIComponent(`page!=${FLOOD_PAGE}`)}`);
    assert.deepEqual([person.results.visitors, person.results.pageviews], [1, BROWSER_PAGES.length], JSON.stringify(person.results));
  });

  // ---- the dashboard ----
  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const dash = await ctx.newPage();
  const problems = [];
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  dash.on('pageerror', e => problems.push(`pageerror: ${e}`));
  dash.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) problems.push(`console: ${m.text()}`); });
  const botsRequests = [];
  dash.on('request', r => { if (new URL(r.url()).pathname === '/api/sites/demo/bots') botsRequests.push(new URL(r.url())); });
  const shown = () => dash.$$eval('[data-testid="bots"] [data-count]', tiles => Object.fromEntries(tiles.map(t =>
    [t.dataset.testid, [Number(t.dataset.count), t.querySelector('.bots-count').textContent]])));
  const wantShown = {
    'bots-total': [wantTotal, String(wantTotal)],
    ...Object.fromEntries(Object.entries(want).map(([r, n]) => [`bots-${r}`, [n, String(n)]])),
  };
  await check('dashboard (today): the Bots blocked card shows the API\'s total and each reason', async () => {
    await dash.goto(`${base}/?period=today`);
    // The form shows once the console said nobody is signed in (showing it
    // empties the field).
    await dash.waitForSelector('[data-testid="key-input"]', { state: 'visible' });
    await dash.fill('[data-testid="key-input"]', key);
    await dash.click('[data-testid="key-submit"]');
    await dash.waitForSelector('#app:not([hidden])');
    await dash.waitForSelector('#app[data-busy="false"]');
    assert.equal(await dash.textContent('#bots-title'), 'Bots blocked');
    await eventually(async () => assert.deepEqual(await shown(), wantShown));
    assert.ok(botsRequests.length >= 1 && botsRequests.every(u => u.searchParams.get('period') === 'today' && !u.searchParams.has('filters')),
      botsRequests.map(u => u.href).join(' '));
  });
  if (SCREENSHOTS) {
    await check('screenshot: docs/screenshots/dashboard-bots.png', async () => {
      try { mkdirSync(SHOT_DIR, { recursive: true }); } catch { /* read-only: skipped below */ }
      await dash.mouse.move(0, 0);
      try {
        await dash.locator('#bots-card').screenshot({ path: path.join(SHOT_DIR, 'dashboard-bots.png') });
        log('   wrote docs/screenshots/dashboard-bots.png');
      } catch (e) { log(`   could not write docs/screenshots/dashboard-bots.png: ${e.message} (skipped)`); }
    });
  }
  await check('dashboard with a filter: the card still shows the site\'s bots and says filters don\'t apply', async () => {
    const n = botsRequests.length;
    await dash.goto(`${base}/?period=today&filters=${encodeURIComponent('page==/demo')}`);
    await dash.waitForSelector('#app[data-busy="false"]');
    await eventually(async () => assert.deepEqual(await shown(), wantShown));
    assert.match(await dash.textContent('#bots-note'), /filters and segments don.t apply/);
    assert.ok(botsRequests.length > n && botsRequests.slice(n).every(u => !u.searchParams.has('filters')), 'asked without the filter');
  });

  // ---- a shared link ----
  await check('a shared link: the API answers 403 not_shared for bots, the dashboard shows no card and asks for none', async () => {
    const out = await tallyCli(ready, ['share', 'create', '--site', 'demo', '--query-url', base, '--label', 'Public board']);
    const url = out.split(/\s+/).find(w => w.includes('#share='));
    assert.ok(url, out);
    const token = decodeURIComponent(url.split('#share=')[1]);
    const res = await fetch(`${base}/api/sites/demo/bots?period=today`, { headers: { Authorization: `Bearer ${token}` } });
    const body = await res.json();
    assert.deepEqual([res.status, body.error && body.error.code], [403, 'not_shared'], JSON.stringify(body));
    const shareCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
    const page = await shareCtx.newPage();
    const asked = [];
    page.on('request', r => { if (r.url().includes('/bots')) asked.push(r.url()); });
    page.on('pageerror', e => problems.push(`shared: pageerror: ${e}`));
    await page.goto(url.replace('#', '?period=today#'));
    await page.waitForSelector('#app:not([hidden])');
    await page.waitForSelector('#app[data-busy="false"]');
    await page.waitForSelector('[data-testid="total-visitors"][data-value="2"]');
    assert.ok(await page.isHidden('[data-testid="bots"]'), 'no Bots blocked card');
    assert.deepEqual(asked, []);
    await shareCtx.close();
  });
  await check('no console errors or uncaught exceptions', () => assert.deepEqual(problems, []));
}

await runTest(main, async () => { for (const b of browsers) await b.close(); });
