#!/usr/bin/env node
// End-to-end test of Tally as a drop-in for Plausible, in a real browser:
// Plausible's official tracker (`@plausible-analytics/tracker` from npm)
// and a legacy `data-domain` script tag (Tally's Plausible-compatible
// tracker at /js/script.outbound-links.file-downloads.js), each on its own
// site's pages, pointed at `tally dev`. Page views, an SPA route change, a
// custom event with props and revenue, an outbound and a download click,
// and engagement on hide must be stored, and the query API must report
// them.
//
//   node e2e/plausible.test.mjs        (after `cargo test --workspace --no-run`)

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TALLY_BIN, TIMEOUT, check, eventually, launchChromium, log, repo, run, runTest, sleep, startTally } from './harness.mjs';

const TRACKER = readFileSync(path.join(repo, 'e2e/node_modules/@plausible-analytics/tracker/plausible.js'), 'utf8');

let browser, http, ready;

/** The pages of one site: a tall home page with an outbound and a download
 *  link and a button that changes the route (pushState). */
function page(head) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>demo</title>${head}</head>
<body style="height:4000px;margin:0">
  <h1>demo</h1>
  <a id="dl" href="/files/report.pdf?v=2">report</a>
  <a id="out" href="https://example.org/elsewhere">elsewhere</a>
  <button id="go" onclick="history.pushState({}, '', '/app/settings')">settings</button>
</body></html>`;
}

const SITES = {
  // The npm package, as a bundler would load it; `__plausible` lets it run
  // under a driven browser (it stays quiet under webdriver otherwise).
  'npm-demo.test': () => page(`<script>window.__plausible = true;</script>
<script type="module">
  import { init, track } from '/tracker.js';
  init({ domain: 'npm-demo.test', endpoint: '${http}/api/event', outboundLinks: true, fileDownloads: true, captureOnLocalhost: true });
  window.signup = () => track('Signup', { props: { plan: 'pro' }, revenue: { amount: 49.9, currency: 'EUR' } });
</script>`),
  // The legacy tag, unchanged but for the host, with the queue snippet.
  'legacy-demo.test': () => page(`<script defer data-domain="legacy-demo.test" src="${http}/js/script.outbound-links.file-downloads.js"></script>
<script>window.plausible = window.plausible || function () { (window.plausible.q = window.plausible.q || []).push(arguments) };
  window.signup = () => plausible('Signup', { props: { plan: 'free' }, revenue: { amount: '19.99', currency: 'USD' } });</script>`),
};

async function main() {
  ready = await startTally();
  http = ready.http;
  log(`tally dev ready at ${http}`);
  const target = ['--dynamodb-endpoint', ready.dynamodb, '--table', ready.table];
  const keys = {};
  await check('tally site create: a site per domain', async () => {
    for (const domain of Object.keys(SITES)) {
      const { stdout } = await run(TALLY_BIN, ['site', 'create', '--domain', domain, ...target]);
      keys[domain] = /api key[^:]*: (tk_\S+)/.exec(stdout)[1];
    }
  }, { required: true });
  const api = async (domain, q) => {
    const res = await fetch(`${http}/api/sites/${domain}/${q}`, { headers: { Authorization: `Bearer ${keys[domain]}` } });
    const body = await res.json();
    assert.equal(res.status, 200, `${q}: ${JSON.stringify(body)}`);
    return body;
  };

  // The sites' pages come from routed public-looking origins while Tally
  // listens on loopback: Chromium's private-network checks would block the
  // tracker's requests (they would not in production, where ingest is
  // public), so they are turned off for this test.
  browser = await launchChromium([
    '--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks',
  ]);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(TIMEOUT);
  // Each site's pages come from its own origin, served here.
  for (const [domain, html] of Object.entries(SITES)) {
    await ctx.route(`http://${domain}/**`, route => {
      const p = new URL(route.request().url()).pathname;
      if (p === '/tracker.js') return route.fulfill({ contentType: 'text/javascript', body: TRACKER });
      if (p.startsWith('/files/')) return route.fulfill({ contentType: 'application/pdf', headers: { 'content-disposition': 'attachment' }, body: '%PDF-1.4' });
      return route.fulfill({ contentType: 'text/html', body: html() });
    });
  }
  await ctx.route('https://example.org/**', r => r.abort());
  const sent = [];
  ctx.on('request', r => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/event') {
      try { sent.push(JSON.parse(r.postData())); } catch { sent.push({ n: 'unparsable' }); }
    }
  });

  for (const domain of Object.keys(SITES)) {
    await check(`${domain}: page view, route change, event, download, outbound click, engagement on hide`, async () => {
      const p = await ctx.newPage();
      p.on('pageerror', e => log(`${domain}: uncaught ${e.message}`));
      p.on('console', m => { if (m.type() === 'error' || m.type() === 'warning') log(`${domain}: console ${m.text()}`); });
      p.on('requestfailed', r => log(`${domain}: request failed ${r.url()} ${r.failure() && r.failure().errorText}`));
      await p.goto(`http://${domain}/`);
      await eventually(() => assert.ok(sent.some(b => b.d === domain && b.n === 'pageview')));
      await p.mouse.wheel(0, 4000);                                     // scroll to the bottom
      await sleep(3500);                                                // engaged time
      await p.click('#go');                                             // SPA route change
      await eventually(() => assert.ok(sent.some(b => b.d === domain && b.n === 'pageview' && b.u.endsWith('/app/settings'))));
      await p.evaluate(() => window.signup());
      await p.click('#dl');
      await sleep(300);
      await p.click('#out');
      await sleep(300);
      await p.goto('about:blank');                                      // hidden: the last engagement
      await p.close();
      await eventually(() => assert.ok(sent.filter(b => b.d === domain && b.n === 'engagement').length >= 1));
    });
  }
  await sleep(1500);
  log(`bodies sent: ${sent.map(b => `${b.d} ${b.n} ${b.u} ${b.sd ?? ''} ${b.e ?? ''}`).join(', ')}`);

  await check('every body was accepted: no 4xx, nothing dropped', async () => {
    const health = await (await fetch(`${http}/health`)).json();
    assert.equal(health.counters.rejected, 0, JSON.stringify(health.counters));
    assert.equal(health.counters.dropped, 0, JSON.stringify(health.counters));
    // Beacons sent while a page unloads reach Tally but are not always
    // reported to Playwright: at least what was seen was stored.
    assert.ok(health.counters.accepted >= sent.length, `${JSON.stringify(health.counters)} for ${sent.length} seen`);
  });

  for (const domain of Object.keys(SITES)) {
    const mine = sent.filter(b => b.d === domain);
    await check(`${domain}: the API counts what the tracker sent`, async () => {
      const stats = await api(domain, 'stats?period=today');
      assert.equal(stats.results.pageviews, mine.filter(b => b.n === 'pageview').length);
      assert.equal(stats.results.pageviews, 2);
      assert.equal(stats.results.visitors, 1);
      assert.equal(stats.results.visits, 1);
      assert.equal(stats.results.bounce_rate, 0);
      const pages = await api(domain, 'breakdown/page?period=today');
      assert.deepEqual(pages.results.map(r => r.value).sort(), ['/', '/app/settings']);
      const events = await api(domain, 'breakdown/event?period=today');
      const byName = Object.fromEntries(events.results.map(r => [r.value, r.events]));
      assert.deepEqual(byName, { Signup: 1, 'Outbound Link: Click': 1, 'File Download': 1 });
      // The event's props are a dimension.
      const plan = mine.find(b => b.n === 'Signup').p.plan;
      const props = await api(domain, 'breakdown/props:plan?period=today');
      const row = props.results.find(r => r.value === plan);
      assert.ok(row && row.events === 1 && row.visitors === 1, JSON.stringify(props.results));
    });
    await check(`${domain}: engagement stored with scroll depth and engaged time`, async () => {
      const engagements = mine.filter(b => b.n === 'engagement');
      assert.ok(engagements.some(b => b.sd === 100), JSON.stringify(engagements));
      assert.ok(engagements.reduce((a, b) => a + (b.e || 0), 0) >= 3000, JSON.stringify(engagements));
      const stats = await api(domain, 'stats?period=today');
      assert.ok(stats.results.visit_duration >= 3, `visit duration ${stats.results.visit_duration} s`);
      // Per page: the home page was scrolled to the bottom and read for
      // over three seconds before the route change.
      const pages = await api(domain, 'breakdown/page?period=today');
      const home = pages.results.find(r => r.value === '/');
      assert.equal(home.scroll_depth, 100, JSON.stringify(home));
      assert.ok(home.time_on_page >= 3, JSON.stringify(home));
      // The same through Plausible's Stats API v2.
      const res = await fetch(`${http}/api/v2/query`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${keys[domain]}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ site_id: domain, metrics: ['visitors', 'time_on_page', 'scroll_depth'], date_range: 'day', dimensions: ['event:page'] }),
      });
      const v2 = await res.json();
      assert.equal(res.status, 200, JSON.stringify(v2));
      const row = v2.results.find(r => r.dimensions[0] === '/');
      assert.deepEqual(row.metrics.slice(0, 1), [1]);
      assert.equal(row.metrics[2], 100);
    });
  }
}

/** Tally's own tracker: hash routes are pages, and the opt-out flag
 *  sends nothing. */
async function tallyTracker(ready) {
  const target = ['--dynamodb-endpoint', ready.dynamodb, '--table', ready.table];
  const { stdout } = await run(TALLY_BIN, ['site', 'create', '--domain', 'hash-demo.test', ...target]);
  const key = /api key[^:]*: (tk_\S+)/.exec(stdout)[1];
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(TIMEOUT);
  await ctx.route('http://hash-demo.test/**', route => route.fulfill({
    contentType: 'text/html',
    body: `<!doctype html><html><body><h1>app</h1><script defer data-site="hash-demo.test" data-hash="true" src="${http}/script.js"></script></body></html>`,
  }));
  const posts = [];
  ctx.on('request', r => { if (r.method() === 'POST' && r.url().endsWith('/collect')) posts.push(r.url()); });
  await check('Tally tracker with data-hash: #/a and #/b are two pages', async () => {
    const p = await ctx.newPage();
    await p.goto('http://hash-demo.test/app#/a');
    await eventually(() => assert.ok(posts.length >= 1));
    await p.evaluate(() => { location.hash = '#/b'; });
    await eventually(() => assert.ok(posts.length >= 2));
    await p.close();
    await eventually(async () => {
      const res = await fetch(`${http}/api/sites/hash-demo.test/breakdown/page?period=today`, { headers: { Authorization: `Bearer ${key}` } });
      const body = await res.json();
      assert.deepEqual(body.results.map(r => r.value).sort(), ['/app#/a', '/app#/b']);
    });
  });
  await check('Tally tracker: localStorage.tally_ignore = "true" sends nothing', async () => {
    const before = posts.length;
    const p = await ctx.newPage();
    await p.addInitScript(() => { localStorage.setItem('tally_ignore', 'true'); });
    await p.goto('http://hash-demo.test/app#/c');
    await sleep(1500);
    await p.evaluate(() => { location.hash = '#/d'; window.tally && window.tally.track('Clicked'); });
    await sleep(1000);
    await p.close();
    assert.equal(posts.length, before, 'no request to /collect');
  });
  await ctx.close();
}

await runTest(async () => { await main(); await tallyTracker(ready); }, async () => { if (browser) await browser.close(); });
