#!/usr/bin/env node
// Affiliates and trusted revenue (issue 24, items 2 and 3), in Chromium:
// the console's Affiliates tab, landing visits with the opt-in affiliate
// module (/affiliate.js), conversions recorded by "the shop's server" with a
// write-scoped key, the dashboard's Trusted revenue card and the commission
// report.
//
// Signed in to the console as the demo owner, the site's Affiliates tab
// adds `alice` (a rate of 0.1, EUR); the table and `tally affiliate list`
// hold it. The shop's pages (Playwright's router, on the demo site) load
// /affiliate.js (data-param="ref,via", data-days="7") and the tracker.
// Chromium lands on `/demo?via=alice` and goes on to `/demo/checkout` (no
// parameter): tallyAffiliate() is alice, localStorage holds one key,
// tally_aff, with only {slug, expires} (7 days after the landing), the
// checkout posts {affiliate: tallyAffiliate()} to the shop's server (a
// route), and nothing but the page views and the module's GET went to
// Tally. A later `?ref=Bob` replaces it (last click wins, folded to bob);
// its expiry moved into the past gives null and removes the key.
// `?ref=<script>`, 200 characters, a space or an empty value store nothing;
// data-storage="session" keeps it in sessionStorage only;
// localStorage.tally_ignore stores (and sends) nothing. Page views counted:
// the 7 the pages sent. With a key made by `tally key create --scope
// write`, three POST …/conversions name the slug the checkout sent: A1
// 10.05 EUR (201), A2 10.25 EUR (201)
// and A1 again at 999 EUR (200 duplicate, nothing changed); the same POST
// with a read key is 403 and stores nothing. By hand: 2 conversions,
// 20.30 EUR; commission per conversion rounded half-even to the cent,
// 1.005 -> 1.00 and 1.025 -> 1.02, so 2.02 (rounding the sum, 2.03, would
// be wrong). The dashboard, opened from the console, shows 2 conversions
// and 20.3 EUR on its Trusted revenue card; GET …/affiliates/alice/
// commission answers 2, 20.3 and 2.02. A shared link's dashboard shows no
// card and asks nothing of …/conversions. Removing alice in the console
// empties the tab; the two conversions keep alice and their commissions
// (GET …/conversions), and a new one naming alice is 400
// unknown_affiliate. `tally affiliate add` and `remove` show in the tab.
// No console errors.
//
//   node e2e/affiliates.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, apiGetAs, awayFromMidnight, check, eventually, launchChromium, log, runTest, sleep,
  startTally, tallyCli,
} from './harness.mjs';

const SLUG = 'alice';
// The orders the shop's server records, in order; the third repeats A1.
const ORDERS = [
  { order_id: 'A1', amount: '10.05', currency: 'EUR', affiliate: SLUG, status: 201 },
  { order_id: 'A2', amount: '10.25', currency: 'EUR', affiliate: SLUG, status: 201 },
  { order_id: 'A1', amount: '999.00', currency: 'EUR', affiliate: SLUG, status: 200 },
];
// Hand sums of the stored two (cents, then as the API's shortest decimal).
const TOTAL = '20.3'; // 1005 + 1025 = 2030 cents
const COMMISSION = '2.02'; // 100 (1.005 half-even) + 102 (1.025 half-even) cents
const STORED = 2;
const DAYS = 7; // the module's data-days
const DAY = 86_400_000;

const browsers = [];
let ready, http;
const tally = args => tallyCli(ready, args);
const tid = id => `[data-testid="${id}"]`;
const keyOf = out => {
  const m = /(tk_\S+)/.exec(out);
  assert.ok(m, `no key in: ${out}`);
  return m[1];
};
async function postConversion(key, body) {
  const res = await fetch(`${http}/api/sites/demo/conversions`, {
    method: 'POST', headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

async function main() {
  log(`tally: ${TALLY_BIN}`);
  // Everything happens today (UTC, the demo site's zone).
  await awayFromMidnight();
  ready = await startTally();
  ({ http } = ready);
  assert.ok(ready.login && ready.password, `no demo login in the ready line: ${JSON.stringify(ready)}`);
  const readKey = keyOf(await tally(['key', 'create', '--site', 'demo', '--label', 'reports', '--scope', 'read']));
  const writeKey = keyOf(await tally(['key', 'create', '--site', 'demo', '--label', 'shop', '--scope', 'write']));
  const apiGet = q => apiGetAs({ http, key: readKey }, q);

  const browser = await launchChromium();
  browsers.push(browser);
  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const con = await ctx.newPage();
  const problems = [];
  con.on('pageerror', e => problems.push(`pageerror: ${e}`));
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  // Chromium logs the one refusal the test asks for (the slug added twice).
  let conflicts = 0;
  const expectedConflict = m => /status of 409/.test(m.text()) && (m.location().url || '').endsWith('/api/console/sites/demo/affiliates') && ++conflicts === 1;
  con.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m) && !expectedConflict(m)) problems.push(`console: ${m.text()}`); });
  con.on('dialog', d => d.accept());
  const rows = () => con.$$eval(tid('affiliate-row'), trs => trs.map(tr => [tr.dataset.slug, tr.querySelector('[data-testid="affiliate-terms"]').textContent]));

  await check('console: the owner signs in and opens the site\'s Affiliates tab (none yet)', async () => {
    await con.goto(`${http}/console`);
    await con.fill(tid('login-email'), ready.login);
    await con.fill(tid('login-password'), ready.password);
    await con.click(tid('login-submit'));
    await con.waitForSelector(tid('me-email'));
    await con.goto(`${http}/console#/sites/demo/affiliates`);
    await con.waitForSelector(tid('affiliate-form'));
    assert.equal(await con.getAttribute(tid('tab-affiliates'), 'aria-current'), 'page');
    assert.deepEqual(await rows(), []);
  }, { required: true });

  await check(`console: ${SLUG} added through the form (rate 0.1, EUR) is listed, and by tally affiliate list`, async () => {
    await con.fill(tid('affiliate-slug'), SLUG);
    await con.selectOption(tid('affiliate-kind'), 'rate');
    await con.fill(tid('affiliate-value'), '0.1');
    await con.fill(tid('affiliate-currency'), 'eur');
    await con.click(tid('affiliate-add'));
    await eventually(async () => assert.deepEqual(await rows(), [[SLUG, '10% of each sale']]), TIMEOUT);
    const listed = (await tally(['affiliate', 'list', '--site', 'demo'])).trim().split('\n');
    assert.deepEqual(listed, [`${SLUG}\trate 0.1\tEUR`]);
    // The same slug again is refused, said under the form; still one row.
    await con.fill(tid('affiliate-slug'), SLUG);
    await con.fill(tid('affiliate-value'), '0.2');
    await con.fill(tid('affiliate-currency'), 'EUR');
    await con.click(tid('affiliate-add'));
    await eventually(async () => assert.match(await con.textContent(`${tid('affiliate-form')} ${tid('form-error')}`), /already has an affiliate/), TIMEOUT);
    assert.deepEqual(await rows(), [[SLUG, '10% of each sale']]);
  }, { required: true });

  // The shop's pages (served through Playwright's router on the demo
  // site): the affiliate module and the tracker. `/demo/session` keeps the
  // slug in sessionStorage; `/shop/checkout` is the shop's own server.
  const shopPage = (storage = '') => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script src="/affiliate.js" data-param="ref,via" data-days="${DAYS}"${storage}></script>
<script defer data-site="demo" src="/script.js"></script></head><body><p id="shop">Shop</p></body></html>`;
  let views = 0; // page views the tracked shop pages sent, by hand
  const checkouts = []; // the bodies the shop's server got
  async function shop(init) {
    const c = await browser.newContext({ locale: 'en-US' });
    c.setDefaultTimeout(TIMEOUT);
    await c.route('https://example.org/**', r => r.abort());
    await c.route(u => u.origin === http && (u.pathname === '/demo' || u.pathname.startsWith('/demo/')),
      r => r.fulfill({ contentType: 'text/html', body: shopPage(new URL(r.request().url()).pathname === '/demo/session' ? ' data-storage="session"' : '') }));
    await c.route(`${http}/shop/checkout`, r => {
      checkouts.push(JSON.parse(r.request().postData()));
      return r.fulfill({ contentType: 'application/json', body: '{"ok":true}' });
    });
    if (init) await c.addInitScript(init);
    const page = await c.newPage();
    const sent = [];
    page.on('request', r => sent.push({ method: r.method(), path: new URL(r.url()).pathname, body: r.postData() || '' }));
    page.on('pageerror', e => problems.push(`shop: pageerror: ${e}`));
    page.on('response', r => { if (r.status() >= 400) problems.push(`shop: ${r.status()} ${r.url()}`); });
    page.on('console', m => { if (m.type() === 'error') problems.push(`shop: console: ${m.text()}`); });
    const go = async path => {
      await page.goto(`${http}${path}`);
      await page.waitForSelector('#shop');
    };
    const stored = () => page.evaluate(() => [{ ...localStorage }, { ...sessionStorage }]);
    return { c, page, sent, go, stored };
  }
  const pageviews = sent => sent.filter(r => r.method === 'POST' && r.path === '/collect' && JSON.parse(r.body).e === 'pageview').length;

  let landedRef = null;
  await check(`a visitor lands on /demo?via=${SLUG} with /affiliate.js (data-param="ref,via", data-days="${DAYS}") and goes on to /demo/checkout: tallyAffiliate() is ${SLUG}; localStorage holds only {slug, expires}; the module sent nothing`, async () => {
    const { c, page, sent, go, stored } = await shop();
    const before = Date.now();
    await go(`/demo?via=${SLUG}`);
    const after = Date.now();
    await go('/demo/checkout');
    assert.equal(new URL(page.url()).search, '', 'the checkout carries no parameter');
    assert.equal(await page.evaluate(() => window.tallyAffiliate()), SLUG);
    const [local, session] = await stored();
    assert.deepEqual(Object.keys(local), ['tally_aff'], 'exactly one key');
    assert.deepEqual(Object.keys(session).filter(k => k !== '_tally_s'), [], 'nothing of the module in sessionStorage');
    const entry = JSON.parse(local.tally_aff);
    assert.deepEqual(Object.keys(entry).sort(), ['expires', 'slug']);
    assert.equal(entry.slug, SLUG);
    assert.ok(entry.expires >= before + DAYS * DAY && entry.expires <= after + DAYS * DAY, `expires ${entry.expires} is ${DAYS} days after the landing`);
    // The checkout, as docs/API.md shows it: the slug goes to the shop's server.
    await page.evaluate(() => fetch('/shop/checkout', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ affiliate: window.tallyAffiliate && tallyAffiliate() }) }).then(r => r.json()));
    assert.deepEqual(checkouts, [{ affiliate: SLUG }]);
    landedRef = checkouts[0].affiliate;
    // What went to Tally: the tracker's requests, and the module's own GET.
    await eventually(() => assert.equal(pageviews(sent), 2), TIMEOUT);
    views += 2;
    const toTally = sent.filter(r => !['/demo', '/demo/checkout', '/shop/checkout', '/favicon.ico'].includes(r.path));
    assert.deepEqual([...new Set(toTally.map(r => `${r.method} ${r.path}`))].sort(), ['GET /affiliate.js', 'GET /script.js', 'POST /collect']);
    // The tracker's own beacons only (page views, and leave beacons as pages unload).
    for (const r of sent.filter(r => r.path === '/collect')) assert.ok(['pageview', 'leave', 'engagement'].includes(JSON.parse(r.body).e), r.body);

    // Last click wins: a later landing on another slug replaces it.
    await go('/demo?ref=Bob');
    views += 1;
    assert.equal(await page.evaluate(() => window.tallyAffiliate()), 'bob', 'folded to lower case as core does');
    assert.deepEqual(Object.keys((await stored())[0]), ['tally_aff']);
    // The entry's expiry moved into the past: null, and the key is gone.
    await page.evaluate(() => localStorage.setItem('tally_aff', JSON.stringify({ slug: 'bob', expires: Date.now() - 1000 })));
    assert.equal(await page.evaluate(() => window.tallyAffiliate()), null);
    assert.deepEqual((await stored())[0], {}, 'the expired entry is removed');
    await eventually(() => assert.equal(pageviews(sent), 3), TIMEOUT);
    await page.goto('about:blank');
    await c.close();
  }, { required: true });

  await check('an invalid slug (?ref=<script>, 200 characters) stores nothing; tallyAffiliate() is null', async () => {
    const { c, page, sent, go, stored } = await shop();
    for (const path of ['/demo?ref=%3Cscript%3E', `/demo?via=${'a'.repeat(200)}`, '/demo?ref=a%20b&via=']) {
      await go(path);
      views += 1;
      assert.deepEqual((await stored())[0], {}, path);
      assert.equal(await page.evaluate(() => window.tallyAffiliate()), null, path);
    }
    await eventually(() => assert.equal(pageviews(sent), 3), TIMEOUT);
    await page.goto('about:blank');
    await c.close();
  });

  await check('data-storage="session": the slug is kept in sessionStorage only', async () => {
    const { c, page, sent, go, stored } = await shop();
    await go(`/demo/session?ref=${SLUG}`);
    views += 1;
    const [local, session] = await stored();
    assert.deepEqual(local, {});
    assert.equal(JSON.parse(session.tally_aff).slug, SLUG);
    assert.equal(await page.evaluate(() => window.tallyAffiliate()), SLUG);
    await eventually(() => assert.equal(pageviews(sent), 1), TIMEOUT);
    await page.goto('about:blank');
    await c.close();
  });

  await check('with localStorage.tally_ignore = "true": nothing stored, tallyAffiliate() is null, nothing sent', async () => {
    const { c, page, sent, go, stored } = await shop(() => {
      if (location.protocol === 'http:') localStorage.setItem('tally_ignore', 'true'); // not on about:blank
    });
    await go(`/demo?via=${SLUG}`);
    await go('/demo/checkout');
    const [local, session] = await stored();
    assert.deepEqual(local, { tally_ignore: 'true' });
    assert.deepEqual(session, {});
    assert.equal(await page.evaluate(() => window.tallyAffiliate()), null);
    await sleep(500);
    assert.deepEqual(sent.filter(r => r.path === '/collect'), [], 'the tracker sends nothing either');
    await page.goto('about:blank');
    await c.close();
  });

  await check('the page views counted equal those the shop pages sent', async () => {
    assert.equal(views, 7); // 3 + 3 + 1, by hand
    await eventually(async () => assert.equal((await apiGet('stats?period=day')).results.pageviews, views), TIMEOUT);
  });

  await check('a read key cannot record a conversion: 403 forbidden, nothing stored', async () => {
    const { status, json } = await postConversion(readKey, { order_id: 'R1', amount: '5.00', currency: 'EUR', affiliate: landedRef });
    assert.equal(status, 403, JSON.stringify(json));
    assert.equal(json.error.code, 'forbidden');
    const summary = await apiGet('conversions/summary?period=day');
    assert.equal(summary.conversions, 0);
    assert.deepEqual(summary.trusted_revenue, []);
  });

  await check(`the shop's server records ${ORDERS.length} conversions with a write key: 201, 201, 200 duplicate`, async () => {
    for (const o of ORDERS) {
      const { status, json } = await postConversion(writeKey, { order_id: o.order_id, amount: o.amount, currency: o.currency, affiliate: landedRef });
      assert.equal(status, o.status, `${o.order_id}: ${JSON.stringify(json)}`);
      assert.equal(json.status, o.status === 201 ? 'stored' : 'duplicate');
    }
    const summary = await apiGet('conversions/summary?period=day');
    assert.equal(summary.conversions, STORED);
    assert.deepEqual(summary.trusted_revenue.map(r => [r.currency, r.total, r.conversions]), [['EUR', TOTAL, STORED]]);
  }, { required: true });

  await check(`the commission report of ${SLUG} equals the hand count: ${STORED} conversions, ${TOTAL} EUR, commission ${COMMISSION}`, async () => {
    const c = await apiGet(`affiliates/${SLUG}/commission?period=day`);
    assert.deepEqual([c.affiliate, c.currency, c.conversions, c.revenue, c.commission], [SLUG, 'EUR', STORED, TOTAL, COMMISSION]);
  });

  await check(`the dashboard, opened from the console, shows trusted revenue ${TOTAL} EUR from ${STORED} conversions`, async () => {
    const asked = [];
    // The today view's requests (not those of the 30-day view the click opens first).
    const onRequest = r => { const u = new URL(r.url()); if (u.pathname.startsWith('/api/sites/') && r.frame().url().includes('period=today')) asked.push(u); };
    con.on('request', onRequest);
    await con.goto(`${http}/console#/sites/demo/affiliates`);
    await con.waitForSelector(tid('site-dashboard'));
    await con.click(tid('site-dashboard'));
    await con.waitForURL(/\/\?site=demo/);
    await con.goto(`${http}/?site=demo&period=today`);
    await con.waitForSelector(`${tid('trusted-revenue')}:not([hidden])`);
    await eventually(async () => {
      assert.equal(await con.getAttribute(tid('trusted-conversions'), 'data-count'), String(STORED));
      assert.equal(await con.getAttribute(tid('trusted-EUR'), 'data-total'), TOTAL);
      assert.equal(await con.getAttribute(tid('trusted-EUR'), 'data-count'), String(STORED));
    }, TIMEOUT);
    assert.match(await con.textContent(tid('trusted-EUR')), /€20\.30/);
    const summaries = asked.filter(u => u.pathname === '/api/sites/demo/conversions/summary');
    assert.ok(summaries.length >= 1, 'the card asked …/conversions/summary');
    for (const u of summaries) assert.equal(u.searchParams.get('period'), 'today', u.href);
    con.off('request', onRequest);
  });

  await check('a shared link\'s dashboard shows no Trusted revenue card and asks nothing of …/conversions', async () => {
    const out = await tally(['share', 'create', '--site', 'demo', '--query-url', http, '--label', 'Board']);
    const url = out.split(/\s+/).find(w => w.includes('#share='));
    assert.ok(url, `no link in: ${out}`);
    const share = await browser.newContext({ locale: 'en-US' });
    share.setDefaultTimeout(TIMEOUT);
    const page = await share.newPage();
    const asked = [];
    const failed = [];
    page.on('request', r => asked.push(new URL(r.url()).pathname));
    page.on('response', r => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
    page.on('pageerror', e => problems.push(`shared: pageerror: ${e}`));
    await page.goto(url.replace('#', '?period=today#'));
    await page.waitForSelector('#app[data-busy="false"]');
    await eventually(async () => assert.match(await page.textContent(tid('shared-badge')), /Shared: Board/), TIMEOUT);
    assert.ok(await page.isHidden(tid('trusted-revenue')), 'no Trusted revenue card');
    assert.deepEqual(asked.filter(p => p.includes('/conversions')), []);
    assert.deepEqual(failed, [], 'no request of the shared view failed');
    await share.close();
  });

  await check(`console: removing ${SLUG} empties the tab; its conversions keep their commissions; a new one naming it is 400`, async () => {
    await con.goto(`${http}/console#/sites/demo/affiliates`);
    await con.waitForSelector(tid('affiliate-delete'));
    await con.click(tid('affiliate-delete'));
    await eventually(async () => assert.deepEqual(await rows(), []), TIMEOUT);
    assert.equal((await tally(['affiliate', 'list', '--site', 'demo'])).trim(), '');
    const list = await apiGet('conversions?period=day');
    assert.deepEqual(list.results.map(c => [c.order_id, c.amount, c.affiliate, c.commission]),
      [['A1', '10.05', SLUG, '1'], ['A2', '10.25', SLUG, '1.02']]);
    const { status, json } = await postConversion(writeKey, { order_id: 'A3', amount: '1.00', currency: 'EUR', affiliate: SLUG });
    assert.equal(status, 400, JSON.stringify(json));
    assert.equal(json.error.code, 'unknown_affiliate');
    assert.equal((await apiGet('conversions/summary?period=day')).conversions, STORED, 'nothing stored');
  });

  await check('the CLI and the console agree: bob added by tally affiliate add shows in the tab, tally affiliate remove takes him out', async () => {
    await tally(['affiliate', 'add', '--site', 'demo', '--slug', 'bob', '--fixed', '2.50', '--currency', 'EUR']);
    await con.reload();
    await eventually(async () => assert.deepEqual(await rows(), [['bob', '2.5 EUR per sale']]), TIMEOUT);
    assert.match(await tally(['affiliate', 'remove', '--site', 'demo', '--slug', 'bob']), /affiliate bob removed/);
    await con.reload();
    await con.waitForSelector(tid('affiliate-form'));
    assert.deepEqual(await rows(), []);
    await assert.rejects(tally(['affiliate', 'remove', '--site', 'demo', '--slug', 'bob']), /has no affiliate "bob"/);
  });

  await check('no page errors or console errors (but the one 409 asked for)', async () => {
    assert.deepEqual(problems, []);
    assert.equal(conflicts, 1);
  });
}

runTest(main, async () => {
  for (const b of browsers) await b.close().catch(() => {});
});
