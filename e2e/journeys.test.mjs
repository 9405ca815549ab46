#!/usr/bin/env node
// Journeys and transitions on the dashboard (issue 22, item 4), in
// Chromium: three visits scripted in separate browser contexts on the demo
// site (tally dev), then the dashboard's Journeys card must show, for the
// entry page /demo, the scripted paths (the most taken first, with its
// visits as the API counts them) and how far visits got; and the
// transitions of /demo/about: where its visits came from and went to.
//
//   A and B: /demo -> /demo/about -> /demo/pricing   (the top path)
//   C:       /demo -> /demo/pricing
//
//   node e2e/journeys.test.mjs

import assert from 'node:assert/strict';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, playVisit, runTest, sleep, startTally,
} from './harness.mjs';

const browsers = [];
let http, key;

async function apiGet(pathAndQuery) {
  const res = await fetch(`${http}/api/sites/demo/${pathAndQuery}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = await res.json();
  assert.equal(res.status, 200, `GET ${pathAndQuery} answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

const TOP = ['/demo', '/demo/about', '/demo/pricing'];
const VISITS = [TOP, TOP, ['/demo', '/demo/pricing']];
const ARROW = ' \u2192 ';

async function main() {
  log(`tally: ${TALLY_BIN}`);
  // Read with period=today (UTC, the demo site's zone): don't straddle
  // midnight.
  const toMidnight = 864e5 - (Date.now() % 864e5);
  if (toMidnight < 120_000) {
    log(`waiting ${Math.ceil(toMidnight / 1000)} s for the UTC day to turn`);
    await sleep(toMidnight + 2000);
  }
  ({ http, key } = await startTally());
  const desktop = await launchChromium();
  browsers.push(desktop);

  await check('three visits scripted in separate browser contexts', async () => {
    for (const pages of VISITS) {
      await playVisit(desktop, http, pages);
      await sleep(50);
    }
  }, { required: true });

  // ---- the API ----
  const api = await eventually(async () => {
    const j = await apiGet('journeys?period=today&entry=/demo&steps=5');
    assert.equal(j.total.visits, VISITS.length, JSON.stringify(j.total));
    return j;
  }, TIMEOUT);
  log(`   API journeys: ${JSON.stringify(api.results.map(r => [r.pages.join(ARROW), r.visits, r.visitors]))}`);
  await check('API: the top path from /demo is the scripted one (2 visits), then /demo -> /demo/pricing (1)', () => {
    assert.deepEqual(api.results.map(r => [r.pages, r.more, r.visits]), [[TOP, false, 2], [['/demo', '/demo/pricing'], false, 1]]);
    assert.equal(api.other, null);
    // Everyone reached step 2; two went on to step 3 and stopped there.
    assert.deepEqual(api.step_rows.slice(0, 3).map(s => [s.reached.visits, s.ended.visits]), [[3, 0], [3, 1], [2, 2]]);
  });

  // ---- the dashboard ----
  const dashCtx = await desktop.newContext({ locale: 'en-US', viewport: { width: 1440, height: 900 } });
  dashCtx.setDefaultTimeout(TIMEOUT);
  const dash = await dashCtx.newPage();
  const problems = [];
  dash.on('pageerror', e => problems.push(`pageerror: ${e}`));
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  dash.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) problems.push(`console: ${m.text()}`); });
  await dash.goto(`${http}/?period=today`);
  await dash.fill('[data-testid="key-input"]', key);
  await dash.click('[data-testid="key-submit"]');
  await dash.waitForSelector('#app:not([hidden])');
  const paths = () => dash.$$eval('[data-testid="journey-path"]', trs => trs.map(tr => [...tr.children].map(td => td.textContent.trim())));

  await check('dashboard: the Journeys card starts at the entry page /demo and its top path is the scripted one, with the API\'s visits and visitors', async () => {
    await eventually(async () => assert.equal(await dash.inputValue('[data-testid="journey-from"]'), 'entry:/demo'), TIMEOUT);
    const shown = await eventually(async () => {
      const rows = await paths();
      assert.equal(rows.length, 2, JSON.stringify(rows));
      return rows;
    }, TIMEOUT);
    assert.deepEqual(shown[0], [TOP.join(ARROW), '2', String(api.results[0].visitors)]);
    assert.deepEqual(shown[1], [['/demo', '/demo/pricing'].join(ARROW), '1', String(api.results[1].visitors)]);
  });

  await check('dashboard: the steps say where visits stopped (step 2: 1 of 3, step 3: 2 of 2)', async () => {
    const steps = await dash.$$eval('[data-testid="journey-step"]', trs => trs.map(tr => [...tr.children].map(td => td.textContent.trim())));
    assert.deepEqual(steps.map(s => s.slice(0, 3)), [['Step 1', '3', '0'], ['Step 2', '3', '1'], ['Step 3', '2', '2']]);
  });

  await check('dashboard: the transitions of /demo/about: came from /demo (2), went to /demo/pricing (2)', async () => {
    await dash.selectOption('[data-testid="transitions-page"]', '/demo/about');
    const side = id => dash.$$eval(`[data-testid="${id}"] tbody tr`, trs => trs.map(tr => [...tr.children].map(td => td.textContent.trim())));
    await eventually(async () => {
      assert.deepEqual((await side('transitions-from')).map(r => r.slice(0, 2)), [['/demo', '2']]);
      assert.deepEqual((await side('transitions-to')).map(r => r.slice(0, 2)), [['/demo/pricing', '2']]);
    }, TIMEOUT);
  });

  await check('dashboard: 3 steps asked: the top path is cut at step 3 and still first', async () => {
    await dash.selectOption('[data-testid="journey-steps"]', '3');
    await eventually(async () => assert.deepEqual((await paths())[0], [TOP.join(ARROW), '2', String(api.results[0].visitors)]), TIMEOUT);
  });

  await check('dashboard: no console errors or uncaught exceptions', () => assert.deepEqual(problems, []));
}

await runTest(main, async () => { for (const b of browsers) await b.close(); });
