#!/usr/bin/env node
// Saved segments and annotations on the dashboard (issue 23, items 3 and
// 4), in Chromium: two visits on the demo site (A: /demo then
// /demo/about; B: /demo only), a site-wide segment "About readers"
// (page==/demo/about) and an annotation dated today whose text is markup,
// `<script>window.__pwned=1</script>`, both made with the CLI
// (`tally segment add`, `tally annotation add`) against `tally dev`'s
// table. The dashboard's segment picker must list the segment; picking
// it shows a segment chip, puts `segment=ID` in the URL and on every
// request of the view, and the totals equal the API's
// `stats?segment=ID` answer (and differ from the whole site's). The
// chart carries one annotation marker on today's bucket whose text,
// shown on hover, is the markup as literal text: no element is made of
// it and `window.__pwned` stays undefined. No console errors.
//
//   node e2e/segments.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, playVisit, run, runTest, sleep, startTally,
} from './harness.mjs';

const browsers = [];
let ready, http, key;
const PERIOD = '7d';
const MARKUP = '<script>window.__pwned=1</script>';
const METRICS = ['visitors', 'visits', 'pageviews'];

async function apiGet(pathAndQuery) {
  const res = await fetch(`${http}/api/sites/demo/${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = await res.json();
  assert.equal(res.status, 200, `GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
/** Runs `tally <args>` against tally dev's table; its stdout. */
async function tally(args) {
  const { stdout } = await run(TALLY_BIN, [...args, '--dynamodb-endpoint', ready.dynamodb, '--table', ready.table], {
    env: { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: 'us-east-1' },
  });
  return stdout;
}

/** The dashboard's totals once the view has loaded. */
async function shownTotals(page) {
  await page.waitForSelector('#app[data-busy="false"] [data-testid="total-visitors"][data-value]');
  return page.$$eval('[data-testid^="total-"]', els => Object.fromEntries(els.map(el => [el.dataset.metric, Number(el.dataset.value)])));
}
const pick = (o, keys) => Object.fromEntries(keys.map(k => [k, o[k]]));

async function main() {
  log(`tally: ${TALLY_BIN}`);
  // Everything happens today (UTC, the demo site's zone): don't straddle midnight.
  const toMidnight = 864e5 - (Date.now() % 864e5);
  if (toMidnight < 120_000) {
    log(`waiting ${Math.ceil(toMidnight / 1000)} s for the UTC day to turn`);
    await sleep(toMidnight + 2000);
  }
  ready = await startTally();
  ({ http, key } = ready);
  const today = new Date().toISOString().slice(0, 10);
  const desktop = await launchChromium();
  browsers.push(desktop);

  await check('two visits: /demo -> /demo/about, and /demo alone', async () => {
    await playVisit(desktop, http, ['/demo', '/demo/about']);
    await playVisit(desktop, http, ['/demo']);
    await eventually(async () => assert.equal((await apiGet(`stats?period=${PERIOD}`)).results.visits, 2), TIMEOUT);
  }, { required: true });

  let segmentId;
  await check('tally segment add and tally annotation add (text: markup) store them', async () => {
    const out = await tally(['segment', 'add', '--site', 'demo', '--name', 'About readers', '--filter', 'page==/demo/about']);
    segmentId = (/^segment (\d+) /.exec(out) || [])[1];
    assert.ok(segmentId, out);
    await tally(['annotation', 'add', '--site', 'demo', '--date', today, '--text', MARKUP]);
    const notes = await apiGet(`annotations?period=${PERIOD}`);
    assert.deepEqual(notes.results.map(a => [a.date, a.text, a.personal]), [[today, MARKUP, false]]);
    const segments = await apiGet('segments');
    assert.deepEqual(segments.results.map(s => [s.id, s.name, s.filter]), [[segmentId, 'About readers', 'page==/demo/about']]);
  }, { required: true });

  const whole = (await apiGet(`stats?period=${PERIOD}`)).results;
  const narrowed = (await apiGet(`stats?period=${PERIOD}&segment=${segmentId}`)).results;
  log(`   API: whole ${JSON.stringify(pick(whole, METRICS))}, segment ${JSON.stringify(pick(narrowed, METRICS))}`);
  await check('API: the segment keeps visit A only (fewer visits than the whole site)', () => {
    assert.equal(narrowed.visits, 1);
    assert.ok(narrowed.visits < whole.visits);
  });

  // ---- the dashboard ----
  const ctx = await desktop.newContext({ locale: 'en-US', viewport: { width: 1440, height: 900 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const dash = await ctx.newPage();
  const problems = [];
  dash.on('pageerror', e => problems.push(`pageerror: ${e}`));
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  dash.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) problems.push(`console: ${m.text()}`); });
  const asked = [];
  dash.on('request', r => { const u = new URL(r.url()); if (u.pathname.startsWith('/api/sites/')) asked.push(u); });
  await dash.goto(`${http}/?period=${PERIOD}`);
  await dash.fill('[data-testid="key-input"]', key);
  await dash.click('[data-testid="key-submit"]');
  await dash.waitForSelector('#app:not([hidden])');

  await check('dashboard: without a segment, the totals are the whole site\'s', async () => {
    assert.deepEqual(pick(await shownTotals(dash), METRICS), pick(whole, METRICS));
  });

  await check('dashboard: the picker lists the segment; picking it shows its chip, puts it in the URL, and the totals equal the API\'s segment=ID answer', async () => {
    await eventually(async () => {
      const options = await dash.$$eval('[data-testid="segment-select"] option', os => os.map(o => [o.value, o.textContent]));
      assert.deepEqual(options, [['', 'All visitors'], [segmentId, 'About readers']]);
    }, TIMEOUT);
    assert.ok(await dash.isVisible('[data-testid="segment-select"]'));
    asked.length = 0;
    await dash.selectOption('[data-testid="segment-select"]', segmentId);
    await dash.waitForSelector(`[data-testid="segment-chip"][data-segment="${segmentId}"]`);
    assert.match(await dash.textContent('[data-testid="segment-chip"]'), /About readers/);
    assert.equal(new URL(dash.url()).searchParams.get('segment'), segmentId);
    await eventually(async () => assert.deepEqual(pick(await shownTotals(dash), METRICS), pick(narrowed, METRICS)), TIMEOUT);
    // Every report of the view carried it (not realtime, nor the lists of
    // segments and annotations, nor the bots blocked: site-wide counts).
    // Nor trusted revenue (conversions/summary): a sale has no page or source.
    const reports = asked.filter(u => !/\/(realtime|segments|annotations|access|funnels|conversions\/summary|bots)$/.test(u.pathname));
    assert.ok(reports.length >= 3, reports.map(String).join('\n'));
    for (const u of reports) assert.equal(u.searchParams.get('segment'), segmentId, String(u));
  });

  await check('dashboard: a reload keeps the segment; removing its chip reads the whole site again', async () => {
    await dash.reload();
    await dash.waitForSelector(`[data-testid="segment-chip"][data-segment="${segmentId}"]`);
    assert.deepEqual(pick(await shownTotals(dash), METRICS), pick(narrowed, METRICS));
    assert.equal(await dash.inputValue('[data-testid="segment-select"]'), segmentId);
    await dash.click('[data-testid="segment-chip"] button');
    await eventually(async () => assert.deepEqual(pick(await shownTotals(dash), METRICS), pick(whole, METRICS)), TIMEOUT);
    assert.equal(await dash.locator('[data-testid="segment-chip"]').count(), 0);
    assert.equal(new URL(dash.url()).searchParams.get('segment'), null);
  });

  await check('dashboard: one annotation marker on today, its text the markup shown literally, nothing run', async () => {
    const marker = dash.locator('[data-testid="annotation-marker"]');
    await eventually(async () => assert.equal(await marker.count(), 1), TIMEOUT);
    assert.equal(await marker.getAttribute('data-date'), today);
    assert.equal(await dash.isVisible('[data-testid="annotation-text"]'), false, 'hidden until hovered');
    await marker.hover();
    await eventually(async () => assert.ok(await dash.isVisible('[data-testid="annotation-text"]')), TIMEOUT);
    const text = await dash.textContent('[data-testid="annotation-text"]');
    assert.ok(text.includes(MARKUP), text);
    assert.equal(await dash.locator('#chart script, [data-testid="annotation-marker"] *:not(b):not(span):not(br)').count(), 0);
    await marker.focus();
    assert.ok(await dash.isVisible('[data-testid="annotation-text"]'), 'shown on focus too');
    assert.equal(await dash.evaluate(() => typeof window.__pwned), 'undefined');
  });

  await check('dashboard: no console errors or uncaught exceptions', () => assert.deepEqual(problems, []));
}

await runTest(main, async () => { for (const b of browsers) await b.close(); });
