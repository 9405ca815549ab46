#!/usr/bin/env node
// Web Vitals end to end (issue 22, item 1), in Chromium: a lab page on the
// demo site loads the opt-in module (/vitals.js) and the tracker; it has a
// deliberate layout shift (a banner inserted at ~300 ms above the text), a
// slow largest paint (a large block inserted at ~1.2 s) and a slow
// interaction (a button whose click handler busy-waits ~300 ms, clicked by
// the test). The page records what its own PerformanceObserver saw (raw
// entries of the same types); the test computes LCP, CLS, INP, FCP and TTFB
// from them itself. After the hide (headless Chromium never hides a page:
// as live.test.mjs, the page redefines visibilityState and dispatches
// visibilitychange), the leave beacon carries the module's values and the
// API's `/vitals` p50 for that page (a single sample) matches the page's own
// figure within the histogram's documented error (2.5 %, plus the rounding
// of ms to integers and CLS to thousandths). A second page POSTs
// ts-analytics-style `vitals` beacons ({metric, value, rating}, CLS ×1000)
// from the page itself: they are stored and reported as sent.
//
//   node e2e/vitals.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, runTest, sleep, startTally,
} from './harness.mjs';

let browser;
/** The histogram's largest relative error (`relative_error` in the body). */
const RELATIVE_ERROR = 0.025;

/** The lab page: observers first, then the module and the tracker. */
const LAB = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vitals lab</title>
<script>
  // The page's own record: raw entries, nothing computed here.
  window.__seen = { lcp: [], shifts: [], events: [], fcp: null, nav: null };
  const watch = (type, f, opt) => new PerformanceObserver(l => l.getEntries().forEach(f))
    .observe(Object.assign({ type, buffered: true }, opt || {}));
  watch('largest-contentful-paint', e => __seen.lcp.push(e.startTime));
  watch('layout-shift', e => __seen.shifts.push({ t: e.startTime, v: e.value, input: e.hadRecentInput }));
  watch('event', e => { if (e.interactionId) __seen.events.push({ id: e.interactionId, d: e.duration, name: e.name }); },
    { durationThreshold: 16 });
  watch('paint', e => { if (e.name === 'first-contentful-paint') __seen.fcp = e.startTime; });
  const nav = performance.getEntriesByType('navigation')[0];
  __seen.nav = { responseStart: nav.responseStart, activationStart: nav.activationStart || 0 };
</script>
<script src="/vitals.js"></script>
<script defer data-site="demo" src="/script.js"></script>
<style>body { font: 16px/1.4 sans-serif; margin: 0; } #banner { height: 160px; background: #eee; }
#big { font-size: 44px; line-height: 1.2; width: 900px; }</style>
</head><body>
<p id="text">Vitals lab: a short paragraph painted first.</p>
<button id="slow">Slow button</button>
<script>
  setTimeout(() => {
    const b = document.createElement('div');
    b.id = 'banner';
    b.textContent = 'late banner';
    document.body.insertBefore(b, document.body.firstChild);
  }, 300);
  setTimeout(() => {
    const d = document.createElement('div');
    d.id = 'big';
    d.textContent = 'The largest paint: a large block of text inserted late. '.repeat(6);
    document.body.appendChild(d);
  }, 1200);
  document.getElementById('slow').addEventListener('click', () => {
    const t = performance.now();
    while (performance.now() - t < 300) { /* busy */ }
    document.getElementById('slow').textContent = 'clicked';
  });
</script>
</body></html>`;

/** The ts-analytics page: the tracker's page view, then `vitals` beacons
 *  POSTed by the page with the tracker's session id. */
const TS = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ts-analytics vitals</title>
<script defer data-site="demo" src="/script.js"></script>
</head><body><p>ts-analytics page</p></body></html>`;

/** What ts-analytics' tracker sends: {metric, value, rating}, CLS ×1000. */
const TS_SENT = { LCP: 2210, INP: 260, CLS: 140, FCP: 930, TTFB: 410 };

/** CLS from layout shifts as the definition says: the largest session
 *  window of shifts without recent input, gaps < 1 s, a window ≤ 5 s. */
function clsOf(shifts) {
  let best = 0, win = 0, first = null, last = null;
  for (const s of shifts.filter(s => !s.input)) {
    if (first !== null && s.t - last < 1000 && s.t - first < 5000) win += s.v;
    else { win = s.v; first = s.t; }
    last = s.t;
    best = Math.max(best, win);
  }
  return best;
}

/** The five figures from the page's raw entries (one interaction: INP is
 *  its longest entry). */
function figuresOf(seen) {
  const act = seen.nav.activationStart;
  const perInteraction = new Map();
  for (const e of seen.events) perInteraction.set(e.id, Math.max(perInteraction.get(e.id) || 0, e.d));
  return {
    lcp: Math.max(seen.lcp[seen.lcp.length - 1] - act, 0),
    cls: clsOf(seen.shifts),
    inp: Math.max(...perInteraction.values()),
    fcp: Math.max(seen.fcp - act, 0),
    ttfb: Math.max(seen.nav.responseStart - act, 0),
  };
}

/** Within the histogram's error of `want`, plus rounding (`unit`). */
function near(got, want, unit, what) {
  assert.equal(typeof got, 'number', `${what}: ${got}`);
  const slack = want * RELATIVE_ERROR + unit;
  assert.ok(Math.abs(got - want) <= slack, `${what}: ${got}, the page saw ${want} (±${slack.toFixed(4)})`);
}

async function main() {
  log(`tally: ${TALLY_BIN}`);
  const { http, key } = await startTally();
  const api = async path => {
    const res = await fetch(`${http}/api/sites/demo/${path}`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200, path);
    return res.json();
  };
  const counters = async () => (await (await fetch(`${http}/health`)).json()).counters;
  browser = await launchChromium();

  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(TIMEOUT);
  await ctx.route(`${http}/demo/vitals-lab`, r => r.fulfill({ contentType: 'text/html', body: LAB }));
  await ctx.route(`${http}/demo/ts-lab`, r => r.fulfill({ contentType: 'text/html', body: TS }));
  // A route makes Playwright report sendBeacon bodies.
  await ctx.route('https://example.org/**', r => r.abort());
  const sent = [];
  ctx.on('request', r => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/collect') sent.push(JSON.parse(r.postData()));
  });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));

  let seen;
  let figures;
  await check('the lab page has a layout shift, a late largest paint and a slow interaction', async () => {
    await page.goto(`${http}/demo/vitals-lab`);
    await eventually(() => assert.equal(sent.filter(s => s.e === 'pageview').length, 1));
    await page.waitForSelector('#big');
    await sleep(1_000);                       // the big block's paint
    await page.click('#slow');
    await page.waitForFunction(() => __seen.events.some(e => e.d >= 250));
    await sleep(300);
    seen = await page.evaluate(() => window.__seen);
    figures = figuresOf(seen);
    log(`   the page saw ${JSON.stringify(figures)}`);
    assert.ok(figures.lcp >= 1_150, `LCP ${figures.lcp} ms: the late block`);
    assert.ok(figures.cls > 0.01, `CLS ${figures.cls}`);
    assert.ok(figures.inp >= 290, `INP ${figures.inp} ms`);
    assert.ok(figures.fcp > 0 && figures.fcp < figures.lcp, `FCP ${figures.fcp} ms`);
    assert.deepEqual(errors, []);
  }, { required: true });

  let leave;
  await check('hidden, the tab sends one leave carrying the five metrics as the page saw them', async () => {
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await eventually(() => assert.equal(sent.filter(s => s.e === 'leave').length, 1));
    leave = sent.find(s => s.e === 'leave').p;
    log(`   the leave beacon: ${JSON.stringify(leave)}`);
    near(leave.lcp, figures.lcp, 1, 'lcp');
    near(leave.inp, figures.inp, 1, 'inp');
    near(leave.fcp, figures.fcp, 1, 'fcp');
    near(leave.ttfb, figures.ttfb, 1, 'ttfb');
    near(leave.cls, figures.cls, 0.0001, 'cls');
  }, { required: true });

  await check('GET /vitals: the lab page\'s p50 of each metric is the page\'s own figure within 2.5 %', async () => {
    const body = await eventually(async () => {
      const b = await api('vitals?period=today');
      assert.ok(b.results.some(r => r.value === '/demo/vitals-lab'), JSON.stringify(b.results));
      return b;
    });
    const row = body.results.find(r => r.value === '/demo/vitals-lab');
    assert.equal(body.meta.relative_error, RELATIVE_ERROR);
    for (const m of ['lcp', 'inp', 'fcp', 'ttfb', 'cls']) {
      assert.equal(row[m].count, 1, `${m}: one sample`);
      // ms to integers (tracker) and CLS to thousandths (stored).
      near(row[m].p50, figures[m], m === 'cls' ? 0.001 : 1, `${m} p50`);
    }
    log(`   API p50: ${['lcp', 'inp', 'cls', 'fcp', 'ttfb'].map(m => `${m} ${row[m].p50}`).join(', ')}`);
  });

  await check('ts-analytics vitals beacons POSTed from a page are stored and reported', async () => {
    const ts = await ctx.newPage();
    await ts.goto(`${http}/demo/ts-lab`);
    await eventually(() => assert.equal(sent.filter(s => s.e === 'pageview').length, 2));
    const statuses = await ts.evaluate(async values => {
      const sid = sessionStorage.getItem('_tally_s').split('.')[0];
      const out = [];
      for (const [metric, value] of Object.entries(values)) {
        const res = await fetch('/collect', {
          method: 'POST',
          headers: { 'Content-Type': 'text/plain' },
          body: JSON.stringify({ s: 'demo', sid, e: 'vitals', u: location.href, tz: 'UTC', p: { metric, value, rating: 'good' } }),
        });
        out.push(res.status);
      }
      return out;
    }, TS_SENT);
    assert.deepEqual(statuses, [202, 202, 202, 202, 202]);
    const body = await eventually(async () => {
      const b = await api('vitals?period=today');
      const r = b.results.find(x => x.value === '/demo/ts-lab');
      assert.ok(r && r.lcp.count === 1 && r.ttfb.count === 1, JSON.stringify(r));
      return b;
    });
    const row = body.results.find(r => r.value === '/demo/ts-lab');
    for (const [metric, value] of Object.entries(TS_SENT)) {
      const m = metric.toLowerCase();
      const want = m === 'cls' ? value / 1000 : value;
      assert.equal(row[m].count, 1, m);
      near(row[m].p50, want, m === 'cls' ? 0.001 : 1, `ts-analytics ${m} p50`);
    }
  });

  await check('the dashboard\'s Web Vitals card shows the API\'s p75s, rating bars and per-page rows, and a tab', async () => {
    const body = await api('vitals?period=today');
    const dashCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 1000 } });
    dashCtx.setDefaultTimeout(TIMEOUT);
    const dash = await dashCtx.newPage();
    const dashErrors = [];
    dash.on('pageerror', e => dashErrors.push(String(e)));
    // (The sign-in probe before the key is entered answers 401.)
    dash.on('console', m => { if (m.type() === 'error' && !/status of 401/.test(m.text())) dashErrors.push(m.text()); });
    await dash.goto(`${http}/?period=today`);
    await dash.fill('[data-testid="key-input"]', key);
    await dash.click('[data-testid="key-submit"]');
    await dash.waitForSelector('#vitals-card[aria-busy="false"] [data-testid="vitals-row"]');
    for (const m of ['lcp', 'inp', 'cls', 'fcp', 'ttfb']) {
      const tile = dash.locator(`[data-testid="vital-${m}"]`);
      assert.equal(Number(await tile.getAttribute('data-p75')), body.totals[m].p75, `${m} p75`);
      assert.equal(Number(await tile.getAttribute('data-count')), body.totals[m].count, `${m} count`);
      for (const k of ['good', 'needs_improvement', 'poor']) {
        const share = Number(await dash.getAttribute(`[data-testid="vital-${m}-${k}"]`, 'data-share'));
        assert.equal(share, body.totals[m][k] || 0, `${m} ${k}`);
      }
    }
    // The lab page's INP (~300 ms) needs improvement; its CLS is good.
    assert.equal(await dash.getAttribute('[data-testid="vital-inp"]', 'data-rating'), 'needs_improvement');
    const pages = await dash.$$eval('[data-testid="vitals-row"]', rs => rs.map(r => r.dataset.value).sort());
    assert.deepEqual(pages, ['/demo/ts-lab', '/demo/vitals-lab']);
    await dash.click('[data-testid="vitals-tab-browser"]');
    await dash.waitForSelector('[data-testid="vitals-tab-browser"][aria-selected="true"]');
    await eventually(async () => {
      const values = await dash.$$eval('[data-testid="vitals-row"]', rs => rs.map(r => r.dataset.value));
      assert.deepEqual(values, ['Chrome']);
    });
    assert.deepEqual(dashErrors, []);
    await dashCtx.close();
  });

  await check('writes: the lab page view and its leave, the ts page view and one per vitals beacon (ingest counters)', async () => {
    const c = await eventually(async () => {
      const x = await counters();
      assert.equal(x.accepted, 2 + 1 + 5);
      return x;
    });
    assert.deepEqual({ dropped: c.dropped, rejected: c.rejected, failed: c.failed },
      { dropped: 0, rejected: 0, failed: 0 });
  });
}

await runTest(main, async () => { if (browser) await browser.close(); });
