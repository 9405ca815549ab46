#!/usr/bin/env node
// The visits list and a visit's journey (issue 22, item 3), in Chromium:
// three visits scripted in separate browser contexts on the demo site
// (tally dev), then read back through the API (`GET …/visits`,
// `visits/{id}`) and on the dashboard's Visits card. The list must equal
// the scripted visits (count, entry and exit page, page views, custom
// events, source, device), newest first; one visit's journey must equal
// its scripted events in order; walking the list a page at a time (a small
// limit, "Load more" on the dashboard) must give every visit once.
//
//   A: desktop, direct: /demo -> /demo/about, where a custom event is sent
//      through the tracker's API (tally.track with props) -> /demo/pricing
//   B: desktop, from a campaign (utm_source): /demo/pricing -> /demo
//   C: a phone (an Android Chrome user agent, 390x844): /demo/about only
//
// Each visit ends by leaving for about:blank, so its last page's leave
// beacon goes out: every page view has one engagement beacon (an unload's
// beacon is not reported by Playwright; ingest's counters must show them).
// The phone is a second Chromium launched with the phone's user agent (a
// launch flag, so its unload beacons carry it too, see harness.mjs).
//
//   node e2e/visits.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, run, CHROMIUM, runTest, sleep, startTally,
} from './harness.mjs';

const browsers = [];
let http, key;

async function apiGet(pathAndQuery) {
  const res = await fetch(`${http}/api/sites/demo/${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = await res.json();
  assert.equal(res.status, 200, `GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
const counters = async () => (await (await fetch(`${http}/health`)).json()).counters;
const pathOf = u => new URL(u).pathname;

/** The scripted visits, in the order they happen. A step is a page load
 *  (`go`: by URL, `click`: a nav link) or a custom event sent through the
 *  tracker's API (`track`). */
const CAMPAIGN = 'e2e-campaign';
const VISITS = [
  {
    name: 'A', phone: false, source: 'Direct', device: 'desktop',
    steps: [
      { go: '/demo' },
      { click: '/demo/about' },
      { track: 'Newsletter signup', props: { list: 'weekly' } },
      { click: '/demo/pricing' },
    ],
  },
  {
    name: 'B', phone: false, source: CAMPAIGN, device: 'desktop',
    steps: [
      { go: `/demo/pricing?utm_source=${CAMPAIGN}&utm_medium=email` },
      { click: '/demo' },
    ],
  },
  {
    name: 'C', phone: true, source: 'Direct', device: 'mobile',
    steps: [{ go: '/demo/about' }],
  },
];

/** What a scripted visit must be in the list and in its journey. */
function expectedOf(v) {
  const pages = v.steps.filter(s => s.go || s.click).map(s => pathOf(`http://x${s.go || s.click}`));
  const journey = [];
  let page = null;
  for (const s of v.steps) {
    if (s.track) { journey.push({ kind: 'event', page, name: s.track, props: s.props }); continue; }
    if (page) journey.push({ kind: 'engagement', page });
    page = pathOf(`http://x${s.go || s.click}`);
    journey.push({ kind: 'pageview', page });
  }
  journey.push({ kind: 'engagement', page });
  return {
    row: {
      entry_page: pages[0], exit_page: pages[pages.length - 1], pageviews: pages.length,
      events: v.steps.filter(s => s.track).length, source: v.source, device: v.device,
    },
    journey,
  };
}
const rowOf = r => ({
  entry_page: r.entry_page, exit_page: r.exit_page, pageviews: r.pageviews, events: r.events, source: r.source, device: r.device,
});
const journeyOf = events => events.map(e => Object.assign({ kind: e.kind, page: e.page },
  e.kind === 'event' ? { name: e.name, props: e.props } : {}));

/** Plays one visit in its own browser context; resolves to the /collect
 *  payloads Playwright saw. */
async function play(browser, v) {
  const ctx = await browser.newContext(v.phone
    ? { locale: 'en-US', viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
    : { locale: 'en-US', viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const sent = [];
  // A route makes Playwright report sendBeacon bodies.
  await ctx.route('https://example.org/**', r => r.abort());
  ctx.on('request', r => {
    if (r.method() === 'POST' && pathOf(r.url()) === '/collect') sent.push(JSON.parse(r.postData()));
  });
  const seen = (pred, what) => eventually(() => assert.ok(sent.some(pred), `no ${what} sent yet`), TIMEOUT);
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  for (const s of v.steps) {
    if (s.go) {
      await page.goto(`${http}${s.go}`);
      const p = pathOf(`${http}${s.go}`);
      await seen(e => e.e === 'pageview' && pathOf(e.u) === p, `page view of ${p}`);
    } else if (s.click) {
      await page.click(`nav a[href="${s.click}"]`);
      await page.waitForURL(`**${s.click}`);
      await seen(e => e.e === 'pageview' && pathOf(e.u) === s.click, `page view of ${s.click}`);
    } else {
      await page.evaluate(([n, props]) => window.tally.track(n, { props }), [s.track, s.props]);
      await seen(e => e.e === 'event' && e.p && e.p.name === s.track, `event ${s.track}`);
    }
  }
  const ua = await page.evaluate(() => navigator.userAgent);
  await page.goto('about:blank');                                      // pagehide: the last page's leave beacon
  assert.deepEqual(errors, [], `visit ${v.name}: page errors`);
  return { ctx, sent, ua };
}

async function main() {
  log(`tally: ${TALLY_BIN}`);
  // The visits are read with period=today (UTC, the demo site's zone):
  // don't straddle midnight.
  const toMidnight = 864e5 - (Date.now() % 864e5);
  if (toMidnight < 120_000) {
    log(`waiting ${Math.ceil(toMidnight / 1000)} s for the UTC day to turn`);
    await sleep(toMidnight + 2000);
  }
  ({ http, key } = await startTally());
  const desktop = await launchChromium();
  browsers.push(desktop);
  const { stdout: version } = await run(CHROMIUM, ['--version']).catch(() => ({ stdout: '' }));
  const major = (/(\d+)\.\d+\.\d+\.\d+/.exec(version) || [])[1] || '130';
  const phoneUa = `Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Mobile Safari/537.36`;
  // The later --user-agent wins (Chromium keeps a switch's last value).
  const phone = await launchChromium([`--user-agent=${phoneUa}`]);
  browsers.push(phone);

  const before = await apiGet('visits?period=today');
  await check('no visits before the test', () => assert.deepEqual(before.results, []), { required: true });

  // ---- 1. the three visits ----
  const expected = VISITS.map(expectedOf);
  await check('three visits scripted in separate browser contexts (desktop, campaign, phone)', async () => {
    let total = 0;
    for (const [i, v] of VISITS.entries()) {
      const { ctx, sent, ua } = await play(v.phone ? phone : desktop, v);
      // Its unload beacon stored before the context goes (and the next
      // visit starts).
      total += expected[i].journey.length;
      await eventually(async () => assert.equal((await counters()).accepted, total, `visit ${v.name}: accepted`), 20_000);
      await ctx.close();
      log(`   visit ${v.name}: ${sent.map(e => `${e.e} ${pathOf(e.u)}`).join(', ')} (+ the unload beacons)`);
      if (v.phone) assert.equal(ua, phoneUa, 'the phone browser sends the phone user agent');
      assert.equal(new Set(sent.map(e => e.sid)).size, 1, `visit ${v.name}: one tab, one session id`);
      await sleep(50);                                                   // distinct starts, whatever the clock's grain
    }
  }, { required: true });

  const sentTotal = expected.reduce((n, x) => n + x.journey.length, 0);
  await check(`ingest accepted the ${sentTotal} scripted events (a page view and its engagement beacon per page, the custom event), nothing dropped`, async () => {
    const c = await eventually(async () => {
      const c = await counters();
      assert.equal(c.accepted, sentTotal);
      return c;
    }, 20_000);
    await sleep(1000);
    const after = await counters();
    assert.equal(after.accepted, sentTotal, 'nothing more arrives');
    assert.deepEqual({ dropped: c.dropped, rejected: c.rejected, failed: c.failed, duplicates: c.duplicates },
      { dropped: 0, rejected: 0, failed: 0, duplicates: 0 });
  }, { required: true });

  // ---- 2. the API ----
  const newestFirst = [...expected].reverse();
  const list = await apiGet('visits?period=today');
  log(`   API visits: ${JSON.stringify(list.results.map(r => [r.start, rowOf(r)]))}`);
  await check('API visits?period=today equals the scripted visits, newest first (entry, exit, page views, events, source, device)', () => {
    assert.equal(list.results.length, VISITS.length);
    assert.deepEqual(list.results.map(rowOf), newestFirst.map(x => x.row));
    assert.equal(list.next, null);
    assert.deepEqual(list.results.map(r => r.bounce), newestFirst.map(x => x.row.pageviews === 1));
    const starts = list.results.map(r => Date.parse(r.start));
    assert.ok(starts.every((s, i) => i === 0 || s <= starts[i - 1]), `starts newest first: ${list.results.map(r => r.start)}`);
    assert.equal(new Set(list.results.map(r => r.id)).size, VISITS.length, 'distinct ids');
  });
  const ids = list.results.map(r => r.id);
  const idOf = name => ids[VISITS.length - 1 - VISITS.findIndex(v => v.name === name)];

  await check('API: every visit\'s journey equals its scripted events in order; visit A\'s custom event has its props', async () => {
    for (const v of VISITS) {
      const j = await apiGet(`visits/${idOf(v.name)}`);
      const want = expected[VISITS.indexOf(v)];
      assert.deepEqual(journeyOf(j.events), want.journey, `visit ${v.name}`);
      assert.equal(j.truncated, false);
      assert.deepEqual(rowOf(j.visit), want.row);
      assert.equal(j.visit.id, idOf(v.name));
      const offsets = j.events.map(e => e.offset_ms);
      assert.equal(offsets[0], 0);
      assert.ok(offsets.every((o, i) => i === 0 || o >= offsets[i - 1]), `offsets in order: ${offsets}`);
    }
  });

  for (const limit of [1, 2]) {
    await check(`API: pages of ${limit} (cursor = next) walk all ${VISITS.length} visits once, in order`, async () => {
      const walked = [];
      let cursor = null, pages = 0;
      do {
        const page = await apiGet(`visits?period=today&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.ok(page.results.length <= limit);
        walked.push(...page.results.map(r => r.id));
        cursor = page.next;
        assert.ok(++pages <= VISITS.length + 1, 'the walk ends');
      } while (cursor);
      assert.deepEqual(walked, ids);
      assert.equal(pages, Math.ceil(VISITS.length / limit));
    });
  }

  // ---- 3. the dashboard ----
  const dashCtx = await desktop.newContext({ locale: 'en-US', viewport: { width: 1440, height: 900 } });
  dashCtx.setDefaultTimeout(TIMEOUT);
  const dash = await dashCtx.newPage();
  const problems = [];
  dash.on('pageerror', e => problems.push(`pageerror: ${e}`));
  // The signed-out answer to the dashboard's first question (`GET
  // /api/console/me`, 401 without a session) is logged by Chromium.
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  dash.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) problems.push(`console: ${m.text()}`); });
  // A page of one row, so "Load more" has pages to walk.
  const asked = [];
  await dash.route(u => pathOf(u.href) === '/api/sites/demo/visits', r => {
    const u = new URL(r.request().url());
    u.searchParams.set('limit', '1');
    asked.push(u.searchParams.get('cursor'));
    return r.continue({ url: u.href });
  });
  await dash.goto(`${http}/?period=today`);
  await dash.fill('[data-testid="key-input"]', key);
  await dash.click('[data-testid="key-submit"]');
  await dash.waitForSelector('#app:not([hidden])');
  const rows = () => dash.$$eval('[data-testid="visits-table"] tbody tr', trs => trs.map(tr => tr.dataset.id));

  await check('dashboard: "Load more" (a page of 1) walks all the visits once, then hides', async () => {
    await eventually(async () => assert.equal((await rows()).length, 1), TIMEOUT);
    for (let n = 2; n <= VISITS.length; n++) {
      await dash.click('[data-testid="visits-more"]');
      await eventually(async () => assert.equal((await rows()).length, n), TIMEOUT);
    }
    await eventually(async () => assert.equal(await dash.isHidden('[data-testid="visits-more"]'), true), TIMEOUT);
    assert.deepEqual(await rows(), ids, 'the rows are the API\'s visits, in order, none twice');
    assert.equal(asked.length, VISITS.length, `visits requests: ${JSON.stringify(asked)}`);
    assert.equal(asked[0], null);
    assert.equal(new Set(asked).size, asked.length, 'every page asked with a new cursor');
  });

  await check('dashboard: the Visits rows show the scripted visits (entry, exit, pages, events, source, device)', async () => {
    const table = await dash.$eval('[data-testid="visits-table"]', t => ({
      head: [...t.querySelectorAll('thead th')].map(th => th.textContent.trim()),
      body: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(td => td.textContent.trim())),
    }));
    const col = label => { const i = table.head.indexOf(label); assert.ok(i >= 0, `column ${label} in ${table.head}`); return i; };
    const shown = table.body.map(cells => ({
      entry_page: cells[col('Entry page')], exit_page: cells[col('Exit page')],
      pageviews: Number(cells[col('Pages')]), events: Number(cells[col('Events')]),
      source: cells[col('Source')], device: cells[col('Device')].split(' \u00b7 ')[0],
    }));
    assert.deepEqual(shown, newestFirst.map(x => x.row));
    const starts = table.body.map(cells => cells[col('Start')]);
    assert.deepEqual(starts, list.results.map(r => r.start.slice(0, 16).replace('T', ' ')));
  });

  await check('dashboard: clicking visit A shows its journey, its scripted events in order', async () => {
    await dash.click(`[data-testid="visit-row"][data-id="${idOf('A')}"]`);
    const a = expected[0];
    const items = await eventually(async () => {
      const got = await dash.$$eval('[data-testid="journey-event"]', lis => lis.map(li => ({ kind: li.dataset.kind, text: li.textContent })));
      assert.equal(got.length, a.journey.length, JSON.stringify(got));
      return got;
    }, TIMEOUT);
    assert.deepEqual(items.map(i => i.kind), a.journey.map(e => e.kind));
    const what = e => e.kind === 'pageview' ? `Viewed ${e.page}`
      : e.kind === 'event' ? `${e.name} on ${e.page} (${Object.entries(e.props).map(([k, v]) => `${k}: ${v}`).join(', ')})`
      : `Engaged `;
    items.forEach((item, i) => {
      const text = item.text.split(' \u00b7 ').slice(1).join(' \u00b7 ');
      const want = what(a.journey[i]);
      if (a.journey[i].kind === 'engagement') assert.ok(text.startsWith(want) && text.includes(` on ${a.journey[i].page}`), `${i}: ${text}`);
      else assert.equal(text, want, `step ${i}`);
    });
    assert.equal(await dash.getAttribute(`[data-testid="visit-row"][data-id="${idOf('A')}"]`, 'aria-selected'), 'true');
    assert.match(await dash.textContent('[data-testid="journey-title"]'), /Direct · desktop$/);
  });

  await check('dashboard: no console errors or uncaught exceptions', () => assert.deepEqual(problems, []));
}

await runTest(main, async () => { for (const b of browsers) await b.close(); });
