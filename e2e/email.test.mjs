#!/usr/bin/env node
// Email reports (issue 23, item 1), in Chromium: the console's "Email
// reports" tab and a weekly report as a mail client shows it.
//
// Page views of three visitors on the demo site today (UTC, its zone),
// sent as the snippet does (`/collect`). Signed in to the console as the
// demo owner, the site's Email reports tab adds two recipients (weekly;
// weekly and monthly) and removes one; the table, and `tally report
// list`, hold the one left. Then `tally report run --at` the next Monday
// 07:20 site-local (the job's step 3 at that instant, into tally dev's
// outbox) sends exactly one mail: the weekly report of the week holding
// today. Its HTML part, opened from `/dev/outbox` at a mail client's
// width, must state that week and show the API's figures for it
// (`GET …/stats` and `GET …/breakdown/page` with period=custom and the
// week's days): visitors, visits, page views and the top page with its
// visitors. A second run at the same instant sends nothing (at most
// once). Writes docs/screenshots/email-report.png (E2E_SCREENSHOTS=0:
// no file).
//
//   node e2e/email.test.mjs

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  TIMEOUT, TALLY_BIN, apiGetAs, awayFromMidnight, check, dataDir, eventually, launchChromium, log, repo, runTest,
  startTally, tallyCli,
} from './harness.mjs';

const SCREENSHOTS = process.env.E2E_SCREENSHOTS !== '0';
const SHOT_DIR = path.join(repo, 'docs/screenshots');
const TEAM = 'team@example.com';
const CLIENT = 'client@example.com';
// Three visitors (a user agent each): the top page is /demo/pricing (3).
const VISITS = [
  { ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36', pages: ['/demo', '/demo/pricing'], referrer: 'https://news.ycombinator.com/' },
  { ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15', pages: ['/demo/pricing', '/demo/about', '/demo/pricing'], referrer: 'https://www.google.com/' },
  { ua: 'Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0', pages: ['/demo/pricing'], referrer: '' },
];

const browsers = [];
let ready, http, key;

const apiGet = q => apiGetAs(ready, q);
const tally = args => tallyCli(ready, args);
/** Posts a page view as the snippet does (`/collect`). */
async function collect(ua, sid, pathname, referrer) {
  const rnd = () => Math.random().toString(36).slice(2, 14).padEnd(12, '0');
  const ts = Date.now();
  const body = { s: 'demo', sid, e: 'pageview', u: `http://localhost${pathname}`, r: referrer, t: 'demo', sw: 1440, sh: 900, tz: 'UTC', eid: rnd() + ts.toString(36), ts };
  const res = await fetch(`${http}/collect`, { method: 'POST', headers: { 'content-type': 'text/plain', 'user-agent': ua }, body: JSON.stringify(body) });
  const json = await res.json();
  assert.equal(json.status, 'accepted', `${pathname}: ${JSON.stringify(json)}`);
}
const outbox = async () => (await (await fetch(`${http}/dev/outbox.json`)).json()).messages;
const tid = id => `[data-testid="${id}"]`;
const isoDay = d => d.toISOString().slice(0, 10);

async function main() {
  log(`tally: ${TALLY_BIN}`);
  // Everything happens today (UTC, the demo site's zone).
  await awayFromMidnight();
  ready = await startTally();
  ({ http, key } = ready);
  assert.ok(ready.login && ready.password, `no demo login in the ready line: ${JSON.stringify(ready)}`);
  // The week holding today (Monday to Sunday) is the one reported on the
  // next Monday; the report step runs at 07:20 that day (UTC = site-local).
  const today = new Date(`${isoDay(new Date())}T00:00:00Z`);
  const dow = today.getUTCDay();
  const monday = new Date(today.getTime() - ((dow + 6) % 7) * 864e5);
  const sunday = new Date(monday.getTime() + 6 * 864e5);
  const nextMonday = new Date(monday.getTime() + 7 * 864e5);
  const week = { from: isoDay(monday), to: isoDay(sunday) };
  const at = `${isoDay(nextMonday)}T07:20:00+00:00`;
  log(`   week ${week.from}..${week.to}, report step at ${at}`);

  const expectedViews = VISITS.reduce((n, v) => n + v.pages.length, 0);
  await check(`page views of ${VISITS.length} visitors today are counted`, async () => {
    for (const [i, v] of VISITS.entries()) {
      for (const p of v.pages) await collect(v.ua, `e2evisit${i}xx`, p, v.referrer);
    }
    await eventually(async () => assert.equal((await apiGet('stats?period=day')).results.pageviews, expectedViews), TIMEOUT);
  }, { required: true });

  // ---- the console's Email reports tab ----
  const browser = await launchChromium();
  browsers.push(browser);
  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 820 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const con = await ctx.newPage();
  const problems = [];
  con.on('pageerror', e => problems.push(`pageerror: ${e}`));
  const signedOutProbe = m => /status of 401/.test(m.text()) && (m.location().url || '').includes('/api/console/me');
  con.on('console', m => { if (m.type() === 'error' && !signedOutProbe(m)) problems.push(`console: ${m.text()}`); });
  con.on('dialog', d => d.accept());
  const rows = () => con.$$eval(`${tid('report-row')}`, trs => trs.map(tr => [tr.dataset.email, tr.querySelector('[data-testid="report-kinds"]').textContent]));

  await check('console: the owner signs in and opens the site\'s Email reports tab (nobody yet)', async () => {
    await con.goto(`${http}/console`);
    await con.fill(tid('login-email'), ready.login);
    await con.fill(tid('login-password'), ready.password);
    await con.click(tid('login-submit'));
    await con.waitForSelector(tid('me-email'));
    await con.goto(`${http}/console#/sites/demo/reports`);
    await con.waitForSelector(tid('report-form'));
    assert.equal(await con.getAttribute(tid('tab-reports'), 'aria-current'), 'page');
    assert.deepEqual(await rows(), []);
  }, { required: true });

  await check('console: two recipients added through the form are listed with their reports', async () => {
    await con.fill(tid('report-email'), TEAM);
    await con.selectOption(tid('report-kind'), 'weekly');
    await con.click(tid('report-add'));
    await eventually(async () => assert.deepEqual(await rows(), [[TEAM, 'weekly']]), TIMEOUT);
    await con.fill(tid('report-email'), CLIENT);
    await con.selectOption(tid('report-kind'), 'both');
    await con.click(tid('report-add'));
    await eventually(async () => assert.deepEqual((await rows()).sort(), [[CLIENT, 'weekly, monthly'], [TEAM, 'weekly']]), TIMEOUT);
  }, { required: true });

  await check('console: removing one leaves the other, in the tab and in `tally report list`', async () => {
    await con.click(`${tid('report-row')}[data-email="${CLIENT}"] ${tid('report-delete')}`);
    await eventually(async () => assert.deepEqual(await rows(), [[TEAM, 'weekly']]), TIMEOUT);
    await con.reload();
    await con.waitForSelector(tid('report-form'));
    await eventually(async () => assert.deepEqual(await rows(), [[TEAM, 'weekly']]), TIMEOUT);
    const listed = (await tally(['report', 'list', '--site', 'demo'])).trim().split('\n').map(l => l.split('\t'));
    assert.deepEqual(listed, [[TEAM, 'weekly']]);
  }, { required: true });

  await check('console: no console errors', () => assert.deepEqual(problems, []));

  // ---- the report step ----
  const before = (await outbox()).length;
  let mail;
  await check(`tally report run --at ${at}: one weekly mail to ${TEAM} in the outbox`, async () => {
    const out = await tally(['report', 'run', '--at', at, '--site', 'demo', '--data-dir', dataDir, '--public-url', http]);
    assert.match(out, /^email reports: 1 sent, 0 skipped/m, out);
    const messages = await outbox();
    assert.equal(messages.length, before + 1);
    mail = messages[0];
    assert.equal(mail.to, TEAM);
    assert.equal(mail.subject, `demo: your weekly report, week ${week.from} to ${week.to}`);
    assert.ok(mail.html, 'the mail has no HTML part');
  }, { required: true });

  await check('a second run at the same instant sends nothing (at most once)', async () => {
    const out = await tally(['report', 'run', '--at', at, '--site', 'demo', '--data-dir', dataDir, '--public-url', http]);
    assert.match(out, /^email reports: 0 sent/m, out);
    assert.equal((await outbox()).length, before + 1);
  });

  const range = `period=custom&from=${week.from}&to=${week.to}`;
  const stats = (await apiGet(`stats?${range}`)).results;
  const pages = (await apiGet(`breakdown/page?${range}&limit=5`)).results;
  log(`   API for the week: ${JSON.stringify({ visitors: stats.visitors, visits: stats.visits, pageviews: stats.pageviews })}, top page ${pages[0].value} (${pages[0].visitors})`);
  await check('API: the week holds what was sent (3 visitors, 6 page views, top page /demo/pricing)', () => {
    assert.equal(stats.visitors, VISITS.length);
    assert.equal(stats.pageviews, expectedViews);
    assert.equal(pages[0].value, '/demo/pricing');
  });

  // ---- the mail in Chromium ----
  const mailCtx = await browser.newContext({ locale: 'en-US', viewport: { width: 640, height: 400 } });
  mailCtx.setDefaultTimeout(TIMEOUT);
  const view = await mailCtx.newPage();
  const mailProblems = [];
  view.on('pageerror', e => mailProblems.push(`pageerror: ${e}`));
  view.on('requestfailed', r => mailProblems.push(`request failed: ${r.url()}`));
  const requested = [];
  view.on('request', r => requested.push(r.url()));

  await check('outbox: the page links the mail\'s HTML part; opened, it states the week', async () => {
    await view.goto(`${http}/dev/outbox`);
    const link = view.locator(`article[id="${mail.id}"] ${tid('html-part')}`);
    await link.click();
    await view.waitForURL(`**/dev/outbox/${mail.id}`);
    assert.equal(await view.textContent('h2'), `demo · week ${week.from} to ${week.to}`);
  }, { required: true });

  const shown = await view.evaluate(() => {
    // The headline cards: a title, a value and a change each.
    const cards = {};
    for (const td of document.querySelectorAll('h2 + table td')) {
      const [title, value] = [...td.querySelectorAll(':scope > div')].map(d => d.textContent.trim());
      cards[title] = value;
    }
    // A list: the rows of the table after its heading (the first is the header).
    const list = name => {
      const h = [...document.querySelectorAll('h3')].find(e => e.textContent.trim() === name);
      return [...h.nextElementSibling.querySelectorAll('tr')].slice(1).map(tr => [...tr.cells].map(c => c.textContent.trim()));
    };
    const days = [...document.querySelectorAll('h3')].find(e => e.textContent.trim() === 'Visitors per day').nextElementSibling.rows[1].cells.length;
    return { cards, pages: list('Top pages'), days };
  });
  log(`   mail shows ${JSON.stringify(shown.cards)}, pages ${JSON.stringify(shown.pages)}`);
  await check('mail: visitors, visits and page views equal GET …/stats for the week', () => {
    assert.deepEqual(
      { visitors: shown.cards.Visitors, visits: shown.cards.Visits, pageviews: shown.cards['Page views'] },
      { visitors: String(stats.visitors), visits: String(stats.visits), pageviews: String(stats.pageviews) });
  });
  await check('mail: the top pages (and their visitors) equal GET …/breakdown/page for the week', () => {
    assert.deepEqual(shown.pages, pages.map(p => [p.value, String(p.visitors)]));
  });
  await check('mail: the chart has the week\'s 7 days; nothing was fetched but the mail itself, no errors', () => {
    assert.equal(shown.days, 7);
    assert.deepEqual(requested.filter(u => !u.startsWith(`${http}/dev/outbox`)), []);
    assert.deepEqual(mailProblems, []);
  });

  if (SCREENSHOTS) {
    await check('screenshot docs/screenshots/email-report.png', async () => {
      mkdirSync(SHOT_DIR, { recursive: true });
      await view.screenshot({ path: path.join(SHOT_DIR, 'email-report.png'), fullPage: true });
    });
  }
}

runTest(main, async () => { for (const b of browsers) await b.close(); });
