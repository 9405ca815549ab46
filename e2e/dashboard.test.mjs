#!/usr/bin/env node
// End-to-end test of Tally in a real browser (Debian's Chromium driven by
// playwright-core): the tracker on the demo site -> ingest -> the query API
// -> the dashboard. Plain node + node:assert; exits non-zero on a failure.
//
//   node e2e/dashboard.test.mjs
//
// Environment:
//   TALLY_BIN        the tally binary (default: ../target/debug/tally from here)
//   CHROMIUM_PATH    the browser (default: /usr/bin/chromium)
//   E2E_SCREENSHOTS  "0" to skip writing docs/screenshots/*.png (default: write)
//   E2E_HEADED       "1" to watch the browser (needs a display)
//   TALLY_DEV_ASSETS passed through to `tally dev` (serve dashboard.html from disk)

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, repo, run, runTest, sleep, startTally,
} from './harness.mjs';

const SCREENSHOTS = process.env.E2E_SCREENSHOTS !== '0';
const SHOT_DIR = path.join(repo, 'docs/screenshots');

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------
let ready, http, key;
async function apiGet(pathAndQuery) {
  const res = await fetch(`${http}/api/sites/demo/${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = await res.json();
  assert.equal(res.status, 200, `GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
async function counters() {
  const res = await fetch(`${http}/health`);
  return (await res.json()).counters;
}
/** Waits until the ingest counters stop moving (1.5 s without a change). */
async function settleCounters(atLeast) {
  let last = null, since = Date.now();
  const end = Date.now() + 30_000;
  for (;;) {
    const c = await counters();
    const sig = JSON.stringify(c);
    if (sig !== last) { last = sig; since = Date.now(); }
    if (c.accepted >= atLeast && Date.now() - since >= 1500) return c;
    if (Date.now() > end) return c;
    await sleep(200);
  }
}
const pathOf = u => new URL(u).pathname;
const countBy = (items, f) => items.reduce((m, x) => m.set(f(x), (m.get(f(x)) || 0) + 1), new Map());
const sortedEntries = m => [...m.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0])));

// The dashboard's number formats (kept in step with dashboard.html).
const fmt = {
  visitors: n => fmtInt(n), visits: n => fmtInt(n), pageviews: n => fmtInt(n),
  views_per_visit: n => new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 }).format(n),
  bounce_rate: n => new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 }).format(n) + '%',
  visit_duration: n => { const m = Math.floor(n / 60), s = Math.round(n % 60); return m ? (s ? `${m}m ${s}s` : `${m}m`) : `${s}s`; },
};
function fmtInt(n) { return new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 }).format(n); }
const fmtOrDash = (v, f) => (v == null ? '\u2014' : f(v));
const fmtRevenue = list => (list && list.length
  ? list.map(r => new Intl.NumberFormat('en-US', { style: 'currency', currency: r.currency }).format(Number(r.total))).join(' \u00b7 ')
  : '\u2014');
/** An exact sum of decimal strings in cents, as the API prints it. */
function centsText(cents) { return cents % 100 ? `${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0').replace(/0$/, '')}` : String(cents / 100); }

async function shownTotals(page) {
  return page.$$eval('[data-testid^="total-"]', cards => Object.fromEntries(cards.map(c =>
    [c.dataset.testid.slice(6), c.querySelector('.stat-value').textContent.trim()])));
}
function expectedTotals(results) {
  return Object.fromEntries(Object.entries(fmt).map(([k, f]) => [k, f(results[k])]));
}
async function shownRows(page, dim) {
  return page.$$eval(`[data-testid="row"][data-dimension="${dim}"]`, rows => rows.map(r => Object.assign(
    { value: r.dataset.value ?? null },
    Object.fromEntries([...r.querySelectorAll('[data-col]')].map(c => [c.dataset.col, c.textContent.trim()])))));
}
async function waitIdle(page) {
  await page.waitForSelector('#app[data-busy="false"]', { timeout: TIMEOUT });
}

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------
let browser;
const consoleErrors = [];
/** The signed-out answer to the dashboard's first question, `GET
 *  /api/console/me` (401 without a session), which Chromium logs. */
const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
function watchConsole(page, label) {
  page.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) consoleErrors.push(`${label}: console error: ${m.text()}`); });
  page.on('pageerror', e => consoleErrors.push(`${label}: uncaught: ${e.message}`));
}

async function main() {
  // The API checks ask for period=today (UTC, the demo site's zone): don't
  // straddle midnight.
  const toMidnight = 864e5 - (Date.now() % 864e5);
  if (toMidnight < 120_000) {
    log(`waiting ${Math.ceil(toMidnight / 1000)} s for the UTC day to turn`);
    await sleep(toMidnight + 2000);
  }
  log(`tally: ${TALLY_BIN}`);
  ready = await startTally();
  http = ready.http; key = ready.key;
  log(`tally dev ready at ${http} (dynamodb ${ready.dynamodb}, table ${ready.table})`);

  // Goals, with the CLI against the embedded DynamoDB.
  const target = ['--dynamodb-endpoint', ready.dynamodb, '--table', ready.table];
  await check('tally goal add: an event goal (Signup) and a page goal (Pricing)', async () => {
    const a = await run(TALLY_BIN, ['goal', 'add', '--site', 'demo', '--event', 'Signup', ...target]);
    const b = await run(TALLY_BIN, ['goal', 'add', '--site', 'demo', '--page', '/demo/pricing', '--name', 'Pricing', ...target]);
    assert.match(a.stdout, /goal added/);
    assert.match(b.stdout, /goal added/);
  });
  await check('tally goal add Purchase (revenue) and tally funnel add: /demo -> /demo/pricing -> Signup', async () => {
    const g = await run(TALLY_BIN, ['goal', 'add', '--site', 'demo', '--event', 'Purchase', ...target]);
    assert.match(g.stdout, /goal added/);
    const f = await run(TALLY_BIN, ['funnel', 'add', '--site', 'demo', '--name', 'Demo signup',
      '--step', '/demo', '--step', '/demo/pricing', '--step', 'event:Signup', ...target]);
    assert.match(f.stdout, /funnel added: demo-signup/);
  });

  browser = await launchChromium();
  log(`chromium ${browser.version()}`);

  // ---- 1. A visitor browses the demo site --------------------------------
  const visitor = await browser.newContext({ locale: 'en-US', timezoneId: 'Europe/Berlin', viewport: { width: 1280, height: 800 } });
  visitor.setDefaultTimeout(TIMEOUT);
  // The outbound link stays on this machine. (Routing also makes Playwright
  // report the bodies of sendBeacon requests: without any route, their
  // postData() is null.)
  await visitor.route('https://example.org/**', r => r.abort());
  const sent = [];                                                  // /collect payloads Playwright observed
  visitor.on('request', r => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/collect') {
      try { sent.push(JSON.parse(r.postData()) || { e: 'unparsable', u: r.url() }); } catch { sent.push({ e: 'unparsable', u: r.url() }); }
    }
  });
  const seen = (pred, what) => eventually(() => assert.ok(sent.some(pred), `no ${what} sent yet`), TIMEOUT);
  const pageviewOf = p => e => e.e === 'pageview' && pathOf(e.u) === p;

  const demo = await visitor.newPage();
  watchConsole(demo, 'demo');
  await check('the demo site sends page views, SPA views, events and clicks', async () => {
    await demo.goto(`${http}/demo`);
    await seen(pageviewOf('/demo'), 'page view of /demo');
    await demo.click('nav a[href="/demo/about"]');
    await demo.waitForURL('**/demo/about');
    await seen(pageviewOf('/demo/about'), 'page view of /demo/about');
    await demo.click('nav a[href="/demo/pricing"]');
    await demo.waitForURL('**/demo/pricing');
    await seen(pageviewOf('/demo/pricing'), 'page view of /demo/pricing');
    await demo.mouse.wheel(0, 5000);                                  // scroll depth: to the bottom
    await demo.waitForFunction(() => scrollY + innerHeight >= document.documentElement.scrollHeight - 2);
    // A DOM click: Playwright's click would first scroll the button (at the
    // top) into view, and the tracker samples the scroll position at most
    // every 250 ms, so the bottom might go unrecorded.
    await demo.evaluate(() => document.getElementById('spa-step-1').click());
    await seen(pageviewOf('/demo/app/step-1'), 'SPA page view of step 1');
    await demo.click('#spa-step-2');
    await seen(pageviewOf('/demo/app/step-2'), 'SPA page view of step 2');
    await demo.click('#signup');
    await seen(e => e.e === 'event' && e.p.name === 'Signup', 'Signup event');
    await demo.click('#custom-event');
    await seen(e => e.e === 'event' && e.p.name === 'Clicked CTA', 'Clicked CTA event');
    const popup = visitor.waitForEvent('page');
    await demo.click('#outbound');                                     // target=_blank: a new tab, aborted above
    await (await popup).close();
    await seen(e => e.e === 'click' && e.p.kind === 'outbound', 'outbound click');
    await demo.click('#download');                                     // same-origin .pdf: a download click, then a page view
    await demo.waitForURL('**/demo/files/report.pdf');
    await seen(e => e.e === 'click' && e.p.kind === 'download', 'download click');
    await seen(pageviewOf('/demo/files/report.pdf'), 'page view of report.pdf');
    await demo.goto('about:blank');                                    // pagehide: the last page's leave beacon
  }, { required: true });

  const pageviews = sent.filter(e => e.e === 'pageview');
  const events = sent.filter(e => e.e === 'event');
  const clicks = sent.filter(e => e.e === 'click');
  const engagementsSeen = sent.filter(e => e.e === 'engagement');
  // Every page view gets exactly one engagement beacon: an SPA route change
  // sends `engagement`, a full page's unload a `leave` (sent while it
  // unloads, which Playwright does not report). The tab is never hidden, so
  // no `show`.
  const expectedAccepted = pageviews.length * 2 + events.length + clicks.length;
  const health = await settleCounters(expectedAccepted);
  log(`observed ${sent.length} /collect requests: ${pageviews.length} page views, ${events.length} events, ` +
    `${clicks.length} clicks, ${engagementsSeen.length} engagement beacons (+ unload beacons); ingest counters ${JSON.stringify(health)}`);
  for (const e of sent) log(`   sent ${e.e.padEnd(10)} ${pathOf(e.u).padEnd(24)} ${e.p && Object.keys(e.p).length ? JSON.stringify(e.p) : ''}`);

  await check('ingest accepted every request (one engagement beacon per page view), none dropped or rejected; scroll depth 100', async () => {
    assert.deepEqual(sent.filter(e => e.e === 'unparsable'), [], 'every /collect body is one JSON object');
    assert.equal(sent.filter(e => e.sid !== sent[0].sid).length, 0, 'one tab, one session id');
    const pricing = engagementsSeen.find(e => pathOf(e.u) === '/demo/pricing');
    assert.equal(pricing && pricing.p.scrollDepth, 100, 'the SPA route change sent /demo/pricing\'s engagement: scrolled to the bottom');
    assert.deepEqual({ dropped: health.dropped, rejected: health.rejected, failed: health.failed, duplicates: health.duplicates },
      { dropped: 0, rejected: 0, failed: 0, duplicates: 0 });
    assert.equal(health.accepted, expectedAccepted, `accepted ${health.accepted}, expected ${expectedAccepted}`);
  });

  // ---- 2. The API counts what was sent ----------------------------------
  const sentPages = countBy(pageviews, e => pathOf(e.u));
  const stats = await apiGet('stats?period=today');
  await check('API stats?period=today: page views == page views sent, 1 visitor, 1 visit, events == events + clicks sent', () => {
    assert.equal(stats.results.pageviews, pageviews.length);
    assert.equal(stats.results.visitors, 1);
    assert.equal(stats.results.visits, 1);
    assert.equal(stats.results.events, events.length + clicks.length);
    assert.equal(stats.results.bounce_rate, 0);
  });
  const pagesApi = await apiGet('breakdown/pages?period=today');
  await check('API breakdown/pages: exactly the visited paths with their page view counts', () => {
    const got = new Map(pagesApi.results.map(r => [r.value, r.pageviews]));
    assert.deepEqual(sortedEntries(got), sortedEntries(sentPages));
    assert.ok(pagesApi.results.every(r => r.visitors === 1));
  });
  const eventsApi = await apiGet('breakdown/events?period=today');
  await check('API breakdown/events: Signup (value 10), Clicked CTA, Outbound Link: Click, File Download, once each', () => {
    const byName = new Map(eventsApi.results.map(r => [r.value, r]));
    assert.deepEqual([...byName.keys()].sort(), ['Clicked CTA', 'File Download', 'Outbound Link: Click', 'Signup'],
      `event rows' value (the event name) is ${JSON.stringify(eventsApi.results.map(r => r.value))}`);
    for (const r of eventsApi.results) assert.equal(r.events, 1, `${r.value}: events`);
  });
  const goalsApi = await apiGet('breakdown/goals?period=today');
  await check('API breakdown/goals: Signup and Pricing converted once each (1 unique, 100%)', () => {
    const byName = new Map(goalsApi.results.map(r => [r.value, r]));
    assert.deepEqual([...byName.keys()].sort(), ['Pricing', 'Signup'],
      `goal rows' value (the goal name) is ${JSON.stringify(goalsApi.results.map(r => r.value))}`);
    for (const r of goalsApi.results) {
      assert.equal(r.conversions, 1, `${r.value}: conversions`);
      assert.equal(r.unique_conversions, 1, `${r.value}: unique conversions`);
      assert.equal(r.conversion_rate, 100, `${r.value}: conversion rate`);
    }
  });
  await check('API entry and exit pages, channel and country of the visit', async () => {
    const entry = await apiGet('breakdown/entry_page?period=today');
    const exit = await apiGet('breakdown/exit_page?period=today');
    const channel = await apiGet('breakdown/channel?period=today');
    const country = await apiGet('breakdown/country?period=today');
    assert.deepEqual(entry.results.map(r => r.value), ['/demo']);
    assert.deepEqual(exit.results.map(r => r.value), ['/demo/files/report.pdf']);
    assert.deepEqual(channel.results.map(r => r.value), ['Direct']);
    assert.deepEqual(country.results.map(r => [r.value, r.name]), [['DE', 'Germany']]);
  });

  // ---- 3. More visitors, straight to /collect ---------------------------
  // A richer data set for the filter check and the screenshots: six other
  // visitors (other user agents, so other visitor ids), with referrers, UTM
  // tags, time zones (countries) and engagement.
  const seeded = await seedVisitors();
  const after = await settleCounters(expectedAccepted + seeded.requests);
  await check(`seeded ${seeded.visitors} more visitors: API totals add up`, async () => {
    assert.equal(after.accepted, expectedAccepted + seeded.requests, JSON.stringify(after));
    const s = await apiGet('stats?period=today');
    assert.equal(s.results.visitors, 1 + seeded.visitors);
    assert.equal(s.results.pageviews, pageviews.length + seeded.pageviews);
  });
  await check('API breakdown/goals: Purchase revenue per currency, exact (19.99 + 19.99 EUR, 5 USD)', async () => {
    const goals = await apiGet('breakdown/goals?period=today');
    const purchase = goals.results.find(r => r.value === 'Purchase');
    assert.ok(purchase, JSON.stringify(goals.results));
    const want = new Map();
    for (const p of seeded.purchases) {
      const w = want.get(p.currency) || { cents: 0, n: 0 };
      want.set(p.currency, { cents: w.cents + p.cents, n: w.n + 1 });
    }
    assert.deepEqual(purchase.revenue.map(r => [r.currency, r.total, r.conversions]),
      [...want.entries()].sort().map(([c, w]) => [c, centsText(w.cents), w.n]));
    assert.equal(purchase.revenue.find(r => r.currency === 'EUR').total, '39.98');
  });
  // The funnel by hand: the browser visitor went /demo, /demo/about,
  // /demo/pricing, ..., Signup (in order, not consecutive); the seeded
  // Firefox visitor /demo, /demo/pricing, Signup; three more started at
  // /demo (one with UTM tags); two never saw /demo.
  const funnelWant = { ordered: [5, 2, 2], strict: [5, 1, 1] };
  for (const mode of ['ordered', 'strict']) {
    await check(`API funnels/demo-signup (${mode}): visitors per step ${funnelWant[mode].join(', ')}`, async () => {
      const f = await apiGet(`funnels/demo-signup?period=today&mode=${mode}`);
      assert.deepEqual(f.results.map(r => r.visitors), funnelWant[mode]);
      assert.deepEqual(f.results.map(r => r.label), ['Visit /demo', 'Visit /demo/pricing', 'Signup']);
    });
  }

  // ---- 4. The dashboard shows what the API says -------------------------
  const dashCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1440, height: 900 } });
  dashCtx.setDefaultTimeout(TIMEOUT);
  const dash = await dashCtx.newPage();
  watchConsole(dash, 'dashboard');
  const apiRequests = [];
  // The reports' calls (not the console's `me`, asked first without a key).
  dash.on('request', r => { if (r.url().includes('/api/') && !r.url().includes('/api/console/')) apiRequests.push(r); });

  await check('dashboard: first visit asks for the key; the key opens the dashboard', async () => {
    await dash.goto(`${http}/`);
    await dash.waitForSelector('[data-testid="key-input"]', { state: 'visible' });
    await dash.fill('[data-testid="key-input"]', key);
    await dash.click('[data-testid="key-submit"]');
    await dash.waitForSelector('#app:not([hidden])');
    await waitIdle(dash);
    assert.equal(await dash.textContent('#site-name'), 'demo');
  }, { required: true });
  await check('dashboard: every API call carries the bearer key', () => {
    assert.ok(apiRequests.length >= 2, `${apiRequests.length} API requests`);
    for (const r of apiRequests) assert.equal(r.headers().authorization, `Bearer ${key}`, r.url());
  });
  await check('dashboard: the 30-day view lists no visits (the list spans at most 7 days) and asks for none', async () => {
    assert.deepEqual(apiRequests.filter(r => new URL(r.url()).pathname.endsWith('/visits')).map(r => r.url()), []);
    assert.match(await dash.textContent('[data-testid="visits-error"]'), /at most 7 days/);
  });
  await check('dashboard: "Today" puts period=today in the URL and loads the view with one request', async () => {
    const before = apiRequests.length;
    await dash.selectOption('#period', 'today');
    await dash.waitForURL(/[?&]period=today\b/);
    await waitIdle(dash);
    const views = apiRequests.slice(before).map(r => new URL(r.url())).filter(u => !u.pathname.endsWith('/realtime'));
    assert.deepEqual(views.map(u => u.pathname).sort(), ['/api/sites/demo/annotations', '/api/sites/demo/bots', '/api/sites/demo/conversions/summary', '/api/sites/demo/dashboard', '/api/sites/demo/funnels/demo-signup', '/api/sites/demo/journeys', '/api/sites/demo/transitions', '/api/sites/demo/visits', '/api/sites/demo/vitals'],
      'one dashboard request per view, and the chart\'s annotations, the Trusted revenue card, the Bots blocked card, the funnel, the journeys card\'s two, the visits list (they read events) and the Web Vitals card');
    for (const u of views) assert.equal(u.searchParams.get('period'), 'today', u.href);
    // Switching a panel's tab uses the rows already loaded.
    const beforeTab = apiRequests.length;
    await dash.click('[data-testid="tab-browser"]');
    await dash.waitForSelector('[data-testid="tab-browser"][aria-selected="true"]');
    await dash.click('[data-testid="tab-device"]');
    assert.equal(apiRequests.slice(beforeTab).filter(r => !r.url().includes('/realtime')).length, 0, 'tabs make no request');
  });

  const api = {
    stats: await apiGet('stats?period=today'),
    pages: await apiGet('breakdown/pages?period=today&limit=10'),
    events: await apiGet('breakdown/events?period=today&limit=10'),
    goals: await apiGet('breakdown/goals?period=today&limit=10'),
    realtime: await apiGet('realtime'),
  };
  await check('dashboard totals == API stats (visitors, visits, page views, views/visit, bounce rate, duration)', () =>
    eventually(async () => assert.deepEqual(await shownTotals(dash), expectedTotals(api.stats.results))));
  await check('dashboard live badge == API realtime visitors', () =>
    eventually(async () => assert.match(await dash.textContent('[data-testid="realtime"]'),
      new RegExp(`^\\s*${api.realtime.visitors} current visitors?\\s*$`))));
  await check('dashboard pages panel == API breakdown/pages (paths, visitors, views, time on page, scroll depth, order)', () =>
    eventually(async () => assert.deepEqual(await shownRows(dash, 'page'),
      api.pages.results.map(r => ({
        value: r.value, visitors: fmtInt(r.visitors), pageviews: fmtInt(r.pageviews),
        time_on_page: fmtOrDash(r.time_on_page, fmt.visit_duration), scroll_depth: fmtOrDash(r.scroll_depth, n => `${fmtInt(n)}%`),
      })))));
  await check('API breakdown/pages has time on page and scroll depth for the engaged pages', () => {
    assert.ok(api.pages.results.some(r => r.time_on_page > 0 && r.scroll_depth > 0), JSON.stringify(api.pages.results));
  });
  await check('dashboard custom events panel has the Signup and Clicked CTA rows with the API counts', () =>
    eventually(async () => {
      const rows = await shownRows(dash, 'event');
      for (const name of ['Signup', 'Clicked CTA']) {
        const want = api.events.results.find(r => r.value === name);
        assert.ok(want, `API has no ${name} row`);
        const row = rows.find(r => r.value === name);
        assert.ok(row, `no ${name} row shown (rows: ${JSON.stringify(rows)})`);
        assert.deepEqual({ visitors: row.visitors, events: row.events }, { visitors: fmtInt(want.visitors), events: fmtInt(want.events) });
      }
    }));
  await check('dashboard goals panel has the Signup, Pricing and Purchase rows with the API conversions and revenue', () =>
    eventually(async () => {
      const rows = await shownRows(dash, 'goal');
      for (const name of ['Signup', 'Pricing', 'Purchase']) {
        const want = api.goals.results.find(r => r.value === name);
        assert.ok(want, `API has no ${name} row`);
        assert.deepEqual(rows.find(r => r.value === name), {
          value: name, unique_conversions: fmtInt(want.unique_conversions), conversions: fmtInt(want.conversions),
          conversion_rate: fmt.bounce_rate(want.conversion_rate), revenue: fmtRevenue(want.revenue),
        });
      }
      assert.match(rows.find(r => r.value === 'Purchase').revenue, /€39\.98.*\$5\.00/);
    }));
  await check('dashboard tabs: Entry pages and Countries load their breakdowns', async () => {
    const entry = await apiGet('breakdown/entry_page?period=today&limit=10');
    await dash.click('[data-testid="tab-entry_page"]');
    await eventually(async () => assert.deepEqual((await shownRows(dash, 'entry_page')).map(r => [r.value, r.visitors]),
      entry.results.map(r => [r.value, fmtInt(r.visitors)])));
    await dash.click('[data-testid="tab-page"]');
    await dash.waitForSelector('[data-testid="row"][data-dimension="page"]');
    const countries = await apiGet('breakdown/country?period=today&limit=10');
    await dash.click('[data-testid="tab-country"]');
    await eventually(async () => {
      assert.deepEqual((await shownRows(dash, 'country')).map(r => r.value), countries.results.map(r => r.value));
      const label = await dash.textContent('[data-testid="row"][data-dimension="country"][data-value="DE"] .label-text');
      assert.equal(label, 'Germany');
    });
  });

  const shownFunnel = () => dash.$$eval('[data-testid="funnel-step"]', steps => steps.map(st => Object.assign({ step: st.dataset.step },
    Object.fromEntries([...st.querySelectorAll('[data-col]')].map(c => [c.dataset.col, c.textContent.trim()])))));
  const funnelRows = f => f.results.map(r => ({
    step: String(r.step), visitors: fmtInt(r.visitors), conversion_rate: fmt.bounce_rate(r.conversion_rate),
    dropoff: r.step === 1 ? '\u2014' : r.dropoff ? `\u2212${fmtInt(r.dropoff)} (${fmt.bounce_rate(r.dropoff_rate)})` : '0',
  }));
  await check('dashboard funnel card == API funnels/demo-signup, in order and with consecutive pages', async () => {
    await eventually(async () => assert.deepEqual(await shownFunnel(), funnelRows(await apiGet('funnels/demo-signup?period=today&mode=ordered'))));
    await dash.selectOption('[data-testid="funnel-mode"]', 'strict');
    await waitIdle(dash);
    await eventually(async () => assert.deepEqual(await shownFunnel(), funnelRows(await apiGet('funnels/demo-signup?period=today&mode=strict'))));
    await dash.selectOption('[data-testid="funnel-mode"]', 'ordered');
    await waitIdle(dash);
  });

  // Screenshots of the unfiltered view.
  if (SCREENSHOTS) {
    await check('screenshots: desktop 1440x900 and phone 390x844, full page', async () => {
      try { mkdirSync(SHOT_DIR, { recursive: true }); } catch { /* read-only: skipped below */ }
      const shot = async (file, viewport) => {
        await dash.setViewportSize(viewport);
        await dash.waitForTimeout(300);                               // the chart redraws on resize (one frame)
        await waitIdle(dash);
        try { await dash.screenshot({ path: path.join(SHOT_DIR, file), fullPage: true }); log(`   wrote docs/screenshots/${file}`); }
        catch (e) { log(`   could not write docs/screenshots/${file}: ${e.message} (skipped)`); }
      };
      await dash.mouse.move(0, 0);
      await shot('dashboard-desktop.png', { width: 1440, height: 900 });
      await shot('dashboard-phone.png', { width: 390, height: 844 });
      await dash.setViewportSize({ width: 1440, height: 900 });
      await waitIdle(dash);
      for (const [file, sel] of [['dashboard-funnel.png', '#funnel-card'], ['dashboard-goals.png', '[data-panel="goals"]'], ['dashboard-pages.png', '[data-panel="pages"]']]) {
        try { await dash.locator(sel).screenshot({ path: path.join(SHOT_DIR, file) }); log(`   wrote docs/screenshots/${file}`); }
        catch (e) { log(`   could not write docs/screenshots/${file}: ${e.message} (skipped)`); }
      }
    });
  }

  // ---- 5. Filters -------------------------------------------------------
  const filtered = await apiGet(`stats?period=today&filters=${encodeURIComponent('page==/demo/pricing')}`);
  const checkFiltered = async () => {
    await dash.waitForSelector('[data-testid="filter-chip"]');
    const chips = await dash.$$eval('[data-testid="filter-chip"]', cs => cs.map(c => c.textContent.replace('\u2715', '').trim()));
    assert.deepEqual(chips, ['Page is /demo/pricing']);
    const q = new URL(dash.url()).searchParams;
    assert.equal(q.get('filters'), 'page==/demo/pricing');
    assert.equal(q.get('period'), 'today');
    await eventually(async () => assert.deepEqual(await shownTotals(dash), expectedTotals(filtered.results)));
  };
  await check('clicking the /demo/pricing row adds the filter chip, the URL filter and the filtered totals', async () => {
    assert.notDeepEqual(expectedTotals(filtered.results), expectedTotals(api.stats.results), 'the filter must change the totals');
    await dash.click('[data-testid="row"][data-dimension="page"][data-value="/demo/pricing"]');
    await checkFiltered();
    await waitIdle(dash);
    assert.deepEqual((await shownRows(dash, 'page')).map(r => r.value), ['/demo/pricing']);
  });
  await check('after a reload the filter chip, the URL filter and the filtered totals are still there', async () => {
    await dash.reload();
    await waitIdle(dash);
    await checkFiltered();
  });
  await check('a second filter (Country is US) combines with the first; removing a chip drops it', async () => {
    const both = await apiGet(`stats?period=today&filters=${encodeURIComponent('page==/demo/pricing;country==US')}`);
    await dash.click('[data-testid="tab-country"]');
    await dash.click('[data-testid="row"][data-dimension="country"][data-value="US"]');
    await dash.waitForFunction(() => document.querySelectorAll('[data-testid="filter-chip"]').length === 2);
    assert.equal(new URL(dash.url()).searchParams.get('filters'), 'page==/demo/pricing;country==US');
    await eventually(async () => assert.deepEqual(await shownTotals(dash), expectedTotals(both.results)));
    await dash.click('[data-testid="filter-chip"][data-dimension="country"] button');
    await dash.waitForFunction(() => document.querySelectorAll('[data-testid="filter-chip"]').length === 1);
    await checkFiltered();
  });

  // ---- 5a. Download and imported history ------------------------------
  await check('Download saves one ZIP of the shown panels as CSV files', async () => {
    await dash.goto(`${http}/?period=today`);
    await waitIdle(dash);
    const [download] = await Promise.all([dash.waitForEvent('download'), dash.click('[data-testid="download"]')]);
    const today = api.stats.meta.from;
    assert.equal(download.suggestedFilename(), `demo-${today}-${today}.zip`);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tally-e2e-')), 'view.zip');
    await download.saveAs(file);
    const bytes = readFileSync(file);
    assert.equal(bytes.subarray(0, 4).toString('hex'), '504b0304', 'a ZIP archive');
    for (const name of ['totals.csv', 'timeseries.csv', 'page.csv', 'source.csv', 'goal.csv']) {
      assert.ok(bytes.includes(Buffer.from(name)), `${name} in the ZIP`);
    }
  });
  await check('tally import csv: imported days are counted and marked on the dashboard', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tally-import-'));
    writeFileSync(path.join(dir, 'totals.csv'), 'date,visitors,visits,pageviews,bounces,visit_duration\n2026-01-05,40,44,90,10,1320\n2026-01-06,60,66,150,12,2400\n');
    writeFileSync(path.join(dir, 'page.csv'), 'date,page,visitors,pageviews\n2026-01-05,/old-post,40,90\n2026-01-06,/old-post,60,150\n');
    const out = await run(TALLY_BIN, ['import', 'csv', dir, '--site', 'demo', ...target]);
    assert.match(out.stdout, /imported 2 day\(s\)/);
    const from = '2026-01-05', to = api.stats.meta.from;
    const stats = await apiGet(`stats?from=${from}&to=${to}`);
    assert.equal(stats.meta.sources.imported.days, 2, JSON.stringify(stats.meta.sources));
    assert.equal(stats.results.visitors, api.stats.results.visitors + 100);
    await dash.goto(`${http}/?from=${from}&to=${to}`);
    await waitIdle(dash);
    assert.equal((await dash.textContent('[data-testid="imported-note"]')).trim(), 'Imported data: 2 days');
    await eventually(async () => assert.deepEqual(await shownTotals(dash), expectedTotals(stats.results)));
  });

  // ---- 5b. Shared links: a fresh browser with no key -------------------
  const shareLink = async (...options) => {
    const out = await run(TALLY_BIN, ['share', 'create', '--site', 'demo', '--query-url', http, ...options, ...target]);
    const url = out.stdout.split(/\s+/).find(w => w.includes('#share='));
    assert.ok(url, out.stdout);
    return url;
  };
  const shareCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  shareCtx.setDefaultTimeout(TIMEOUT);
  const sharePage = await shareCtx.newPage();
  sharePage.on('pageerror', e => consoleErrors.push(`shared: uncaught: ${e.message}`));
  sharePage.on('console', m => { if (m.type() === 'error' && !/status of 401/.test(m.text())) consoleErrors.push(`shared: ${m.text()}`); });
  await check('a shared link opens the dashboard without a key, read-only, with the API numbers', async () => {
    const url = await shareLink('--label', 'Team board');
    const q = url.replace('#', '?period=today#');
    await sharePage.goto(q);
    await waitIdle(sharePage);
    assert.ok(await sharePage.isHidden('[data-testid="key-input"]'), 'no key form');
    assert.equal((await sharePage.textContent('[data-testid="shared-badge"]')).trim(), 'Shared: Team board');
    assert.ok(await sharePage.isHidden('#signout'), 'no "Change key"');
    await eventually(async () => assert.deepEqual(await shownTotals(sharePage), expectedTotals(api.stats.results)));
    assert.ok(sharePage.url().includes('#share=ts_'), 'the link stays in the URL');
    assert.equal(await sharePage.evaluate(() => localStorage.getItem('tally.key')), null, 'nothing stored as a key');
  });
  await check('a filtered, password-protected link asks for its password, refuses a wrong one, then shows the filtered numbers', async () => {
    const url = await shareLink('--filter', 'page==/demo/pricing', '--password', 'correct horse battery');
    await sharePage.goto('about:blank'); // a new document, not a fragment change
    await sharePage.goto(url.replace('#', '?period=today#'));
    await sharePage.waitForSelector('[data-testid="share-password"]', { state: 'visible' });
    await sharePage.fill('[data-testid="share-password"]', 'wrong horse');
    await sharePage.click('[data-testid="share-submit"]');
    await eventually(async () => assert.match(await sharePage.textContent('#share-error'), /Wrong password/));
    await sharePage.fill('[data-testid="share-password"]', 'correct horse battery');
    await sharePage.click('[data-testid="share-submit"]');
    await waitIdle(sharePage);
    const filtered = await apiGet('stats?period=today&filters=page%3D%3D%2Fdemo%2Fpricing');
    await eventually(async () => assert.deepEqual(await shownTotals(sharePage), expectedTotals(filtered.results)));
    assert.ok(await sharePage.isHidden('[data-testid="realtime"]'), 'no unfiltered realtime on a filtered link');
    // A reload keeps the session for this tab.
    await sharePage.reload();
    await waitIdle(sharePage);
    await eventually(async () => assert.deepEqual(await shownTotals(sharePage), expectedTotals(filtered.results)));
  });
  await check('a revoked link says so on its next load', async () => {
    const url = await shareLink('--label', 'soon revoked');
    const prefix = url.split('#share=')[1].slice(0, 9);
    await run(TALLY_BIN, ['share', 'revoke', '--site', 'demo', prefix, ...target]);
    await sharePage.goto('about:blank');
    await sharePage.goto(url);
    await eventually(async () => assert.match(await sharePage.textContent('#share-title'), /no longer opens/));
    assert.ok(await sharePage.isHidden('[data-testid="share-password"]'));
  });
  await shareCtx.close();

  // ---- 5b. Signed in with email: the cookie, no key -----------------------
  const memberCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  memberCtx.setDefaultTimeout(TIMEOUT);
  const memberPage = await memberCtx.newPage();
  watchConsole(memberPage, 'member');
  const memberRequests = [];
  memberPage.on('request', r => { if (r.url().includes('/api/sites/')) memberRequests.push(r); });
  await check('the key form links to the console\'s email sign-in', async () => {
    await memberPage.goto(`${http}/`);
    await memberPage.waitForSelector('[data-testid="key-input"]', { state: 'visible' });
    assert.equal(await memberPage.getAttribute('[data-testid="email-signin"]', 'href'), '/console#/login');
  });
  if (ready.login) {
    await check('signed in with email, the dashboard reads the site with the session cookie: no key, a site switcher, the API numbers', async () => {
      const status = await memberPage.evaluate(async ([email, password]) => (await fetch('/api/console/login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }),
      })).status, [ready.login, ready.password]);
      assert.equal(status, 200, 'console login');
      await memberPage.goto(`${http}/?site=demo&period=today`);
      await waitIdle(memberPage);
      assert.ok(await memberPage.isHidden('[data-testid="key-input"]'), 'no key form');
      assert.equal(await memberPage.inputValue('[data-testid="site-switch"]'), 'demo');
      const options = await memberPage.$$eval('[data-testid="site-switch"] option', os => os.map(o => o.value));
      assert.ok(options.includes('demo'), `switcher lists ${options}`);
      assert.equal(await memberPage.getAttribute('[data-testid="console-link"]', 'href'), '/console');
      assert.ok(await memberPage.isHidden('#signout'), 'no "Change key"');
      await eventually(async () => assert.deepEqual(await shownTotals(memberPage), expectedTotals(api.stats.results)));
      assert.ok(memberRequests.length >= 2, `${memberRequests.length} report requests`);
      for (const r of memberRequests) assert.equal(r.headers().authorization, undefined, r.url());
      assert.match(memberPage.url(), /[?&]site=demo\b/);
      assert.equal(await memberPage.evaluate(() => localStorage.getItem('tally.key')), null, 'nothing stored as a key');
    });
  }
  await memberCtx.close();

  // ---- 6. Error states (a separate page: these provoke failed requests) ---
  const errCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  errCtx.setDefaultTimeout(TIMEOUT);
  const errPage = await errCtx.newPage();
  errPage.on('pageerror', e => consoleErrors.push(`error-states: uncaught: ${e.message}`));
  await check('a wrong key shows the key form again with the API message', async () => {
    await errPage.goto(`${http}/?period=today`);
    await errPage.fill('[data-testid="key-input"]', `tk_${'0'.repeat(40)}.demo`);
    await errPage.click('[data-testid="key-submit"]');
    await eventually(async () => assert.match(await errPage.textContent('#key-error'), /invalid or revoked API key/));
    assert.ok(await errPage.isVisible('[data-testid="key-input"]'));
  });
  await check('the network down shows "Can\'t reach Tally" with a retry that recovers', async () => {
    await errPage.fill('[data-testid="key-input"]', key);
    await errPage.click('[data-testid="key-submit"]');
    await waitIdle(errPage);
    await errPage.route('**/api/**', r => r.abort('internetdisconnected'));
    await errPage.selectOption('#period', 'yesterday');
    await errPage.waitForSelector('[data-testid="banner-network"]');
    assert.match(await errPage.textContent('[data-testid="banner-network"]'), /Can.t reach Tally/);
    await errPage.unroute('**/api/**');
    await errPage.click('[data-testid="retry"]');
    await waitIdle(errPage);
    await errPage.waitForSelector('[data-testid="banner-network"]', { state: 'detached' });
  });
  await check('an API error shows its message (custom range with from after to)', async () => {
    await errPage.goto(`${http}/?from=2026-02-10&to=2026-02-01`);
    await errPage.waitForSelector('[data-testid="banner-error"]');
    assert.match(await errPage.textContent('[data-testid="banner-error"]'), /must not be after/);
  });

  await check('no console errors or uncaught exceptions on the demo pages and the dashboard', () => {
    assert.deepEqual(consoleErrors, []);
  });
}

// ---------------------------------------------------------------------------
// Seed: other visitors posted straight to /collect (as the tracker would).
// ---------------------------------------------------------------------------
async function seedVisitors() {
  const UA = {
    firefoxWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
    iphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
    android: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
    safariMac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
    edge: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
    chromeMac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  };
  const visitors = [
    { ua: UA.firefoxWin, tz: 'America/New_York', ref: 'https://www.google.com/', pages: ['/demo', '/demo/pricing'], events: [['Signup', 10], ['Purchase', null, { amount: '19.99', currency: 'EUR' }]], secs: 95 },
    { ua: UA.iphone, tz: 'Europe/London', ref: 'https://news.ycombinator.com/', pages: ['/demo/about'], secs: 4, sw: 390, sh: 844 },
    { ua: UA.android, tz: 'Asia/Tokyo', ref: '', pages: ['/demo?utm_source=newsletter&utm_medium=email&utm_campaign=launch', '/demo/app/step-1'], secs: 41, sw: 412, sh: 915 },
    { ua: UA.safariMac, tz: 'Europe/Paris', ref: 'https://t.co/', pages: ['/demo/pricing'], events: [['Clicked CTA'], ['Purchase', null, { amount: 19.99, currency: 'eur' }]], secs: 23 },
    { ua: UA.edge, tz: 'Europe/Berlin', ref: '', pages: ['/demo'], secs: 2 },
    { ua: UA.chromeMac, tz: 'America/Los_Angeles', ref: 'https://github.com/', pages: ['/demo/about', '/demo'], events: [['Purchase', null, { amount: '5.00', currency: 'USD' }]], secs: 130 },
  ];
  const rnd = () => Math.random().toString(36).slice(2, 14).padEnd(12, '0');
  let requests = 0, pageviews = 0;
  const purchases = [];
  for (const v of visitors) {
    const sid = rnd();
    let ref = v.ref;
    const post = async (e, u, p) => {
      const ts = Date.now();
      const body = { s: 'demo', sid, e, p, u, r: ref, t: 'Tally demo', sw: v.sw || 1440, sh: v.sh || 900, tz: v.tz, eid: rnd() + ts.toString(36), ts };
      const res = await fetch(`${http}/collect`, { method: 'POST', headers: { 'content-type': 'text/plain', 'user-agent': v.ua }, body: JSON.stringify(body) });
      const json = await res.json();
      assert.equal(json.status, 'accepted', `seed ${e} ${u}: ${JSON.stringify(json)}`);
      requests++;
    };
    for (const [i, p] of v.pages.entries()) {
      const u = `${http.replace('127.0.0.1', 'localhost')}${p}`;
      await post('pageview', u, {});
      pageviews++;
      if (i === v.pages.length - 1) {
        for (const [name, value, revenue] of v.events || []) {
          await post('event', u, Object.assign({ name }, value == null ? {} : { value }, revenue ? { revenue } : {}));
          if (revenue) purchases.push({ currency: revenue.currency.toUpperCase(), cents: Math.round(Number(revenue.amount) * 100) });
        }
      }
      await post('engagement', u, { timeOnPage: Math.round(v.secs / v.pages.length), scrollDepth: 60 + 10 * i });
      ref = u;
    }
  }
  log(`seeded ${visitors.length} visitors: ${pageviews} page views, ${requests} requests`);
  return { visitors: visitors.length, pageviews, requests, purchases };
}

// ---------------------------------------------------------------------------
await runTest(main, async () => { if (browser) await browser.close(); });
