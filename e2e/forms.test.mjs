#!/usr/bin/env node
// Form submissions end to end (issue 23, item 6), in Chromium: pages on the
// demo site (served through Playwright's router) load the opt-in module
// (/forms.js) and the tracker. Every request each page sends is recorded
// (URL and body). The checks:
//   - a form whose submit handler calls preventDefault (an SPA form) with a
//     text field holding a unique secret, a password field and a hidden
//     field: one click on its button is exactly one `Form: Submission`
//     event with only `{path}` as its properties; Enter in its text field
//     is a second; the page's own submit handler saw the same two;
//   - a form with an empty `required` field: the browser blocks it, its
//     handler sees nothing, nothing is sent;
//   - a `novalidate` form with an invalid email counts (as Plausible);
//   - a form that really posts (method=post, navigating to a thanks page)
//     counts once (the event leaves with the unloading page);
//   - the module before the tracker: a submit waits in `tally.q` and is
//     sent when the tracker starts;
//   - a page without /forms.js sends no form event; with
//     localStorage.tally_ignore = "true" the page sends nothing at all;
//   - no request any page sent to Tally (and no request but the real form's
//     own POST to its action) holds a secret or a field's name;
//   - the API counts exactly the submissions made: `breakdown/events`,
//     `breakdown/props:path` and the goal `Form: Submission` (made with
//     `tally goal add`), with no secret in any answer.
//
//   node e2e/forms.test.mjs

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  TIMEOUT, TALLY_BIN, apiGetAs, awayFromMidnight, check, eventually, launchChromium, log, runTest, sleep,
  startTally, tallyCli,
} from './harness.mjs';

let browser;
const EVENT = 'Form: Submission';
// Unique per run, so a match can only come from this page's fields.
const SECRET = `s3cret-${randomBytes(8).toString('hex')}`;
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const HIDDEN = `hid-${randomBytes(8).toString('hex')}`;
const FIELD_NAMES = ['fld_contact_note', 'fld_pass_word', 'fld_hidden_token', 'fld_real_note', 'fld_mail_x'];
const NEEDLES = [SECRET, PASSWORD, HIDDEN, ...FIELD_NAMES];

const head = (forms, title) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
${forms ? '<script src="/forms.js"></script>' : ''}
<script defer data-site="demo" src="/script.js"></script>
</head>`;

/** The forms page; `window.__submits` counts the submit events the page's
 *  own handlers saw (bubble phase, after the module's capture listener). */
const FORMS_BODY = `<body>
<script>window.__submits = { spa: 0, invalid: 0, novalidate: 0 };</script>
<form id="spa" action="/demo/never" onsubmit="event.preventDefault(); __submits.spa++">
  <input type="text" name="fld_contact_note" value="${SECRET}">
  <input type="password" name="fld_pass_word" value="${PASSWORD}">
  <input type="hidden" name="fld_hidden_token" value="${HIDDEN}">
  <button id="spa-send" type="submit">Send</button>
</form>
<form id="invalid" onsubmit="event.preventDefault(); __submits.invalid++">
  <input type="text" name="fld_mail_x" required>
  <button id="invalid-send" type="submit">Send</button>
</form>
<form id="novalidate" novalidate onsubmit="event.preventDefault(); __submits.novalidate++">
  <input type="email" name="fld_mail_x" value="not an email">
  <button id="novalidate-send" type="submit">Send</button>
</form>
<form id="real" method="post" action="/demo/forms-thanks">
  <input type="text" name="fld_real_note" value="${SECRET}">
  <input type="hidden" name="fld_hidden_token" value="${HIDDEN}">
  <button id="real-send" type="submit">Send</button>
</form>
</body></html>`;
const FORMS = head(true, 'Forms') + FORMS_BODY;
const NONE = head(false, 'No forms module') + FORMS_BODY;
const THANKS = `${head(false, 'Thanks')}<body><p id="thanks">Thanks</p></body></html>`;
/** The module alone: the tracker is added by the test after a submit. */
const QUEUE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Queue</title>
<script src="/forms.js"></script></head><body>
<form id="spa" onsubmit="event.preventDefault()"><input type="text" name="fld_contact_note" value="${SECRET}">
<button id="spa-send" type="submit">Send</button></form>
<script>function addTracker() {
  const s = document.createElement('script');
  s.src = '/script.js'; s.dataset.site = 'demo';
  document.head.appendChild(s);
}</script></body></html>`;

async function main() {
  await awayFromMidnight();
  log(`tally: ${TALLY_BIN}`);
  const ready = await startTally();
  const { http } = ready;
  const api = q => apiGetAs(ready, q);
  browser = await launchChromium();

  // Every request of every context: method, URL, body, resource type.
  const requests = [];
  const events = () => requests.filter(r => r.method === 'POST' && new URL(r.url).pathname === '/collect')
    .map(r => JSON.parse(r.body));
  const formEvents = () => events().filter(e => e.e === 'event' && e.p && e.p.name === EVENT);
  const errors = [];
  async function context(init) {
    const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1024, height: 800 } });
    ctx.setDefaultTimeout(TIMEOUT);
    await ctx.route(`${http}/demo/forms`, r => r.fulfill({ contentType: 'text/html', body: FORMS }));
    await ctx.route(`${http}/demo/forms-none`, r => r.fulfill({ contentType: 'text/html', body: NONE }));
    await ctx.route(`${http}/demo/forms-queue`, r => r.fulfill({ contentType: 'text/html', body: QUEUE }));
    await ctx.route(`${http}/demo/forms-thanks`, r => r.fulfill({ contentType: 'text/html', body: THANKS }));
    // A route makes Playwright report sendBeacon bodies.
    await ctx.route('https://example.org/**', r => r.abort());
    ctx.on('request', r => requests.push({
      method: r.method(), url: r.url(), body: r.postData() || '', type: r.resourceType(),
    }));
    if (init) await ctx.addInitScript(init);
    const page = await ctx.newPage();
    page.on('pageerror', e => errors.push(String(e)));
    return { ctx, page };
  }

  let submits = 0;                    // submissions made on tracked pages
  const perPath = { '/demo/forms': 0, '/demo/forms-queue': 0 };
  const { ctx, page } = await context();

  await check('the forms page loads the module and the tracker: one page view', async () => {
    const res = await page.request.get(`${http}/forms.js`);
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-type'], /javascript/);
    await page.goto(`${http}/demo/forms`);
    await eventually(() => assert.equal(events().filter(e => e.e === 'pageview').length, 1));
    assert.equal(await page.evaluate(() => window.tallyForms), 1);
  }, { required: true });

  await check('one click on an SPA form (preventDefault) is exactly one Form: Submission with only {path}', async () => {
    await page.click('#spa-send');
    submits++; perPath['/demo/forms']++;
    await eventually(() => assert.equal(formEvents().length, 1));
    await sleep(1_000);                               // nothing more comes
    assert.equal(formEvents().length, 1);
    assert.equal(await page.evaluate(() => __submits.spa), 1, 'the page saw one submit');
    const e = formEvents()[0];
    assert.deepEqual(e.p, { name: EVENT, props: { path: '/demo/forms' } });
    assert.equal(e.u, `${http}/demo/forms`);
  });

  await check('Enter in the SPA form\'s text field is a second submission, a second event', async () => {
    await page.press('#spa input[type="text"]', 'Enter');
    submits++; perPath['/demo/forms']++;
    await eventually(() => assert.equal(formEvents().length, 2));
    assert.equal(await page.evaluate(() => __submits.spa), 2);
  });

  await check('a form with an empty required field: the browser blocks it, no event', async () => {
    const before = requests.length;
    await page.click('#invalid-send');
    await sleep(1_000);
    assert.equal(await page.evaluate(() => __submits.invalid), 0, 'the browser fired no submit');
    assert.equal(await page.evaluate(() => document.querySelector('#invalid').checkValidity()), false);
    assert.equal(formEvents().length, 2);
    assert.deepEqual(requests.slice(before).filter(r => new URL(r.url).pathname === '/collect'), []);
  });

  await check('a novalidate form with an invalid email counts (as Plausible\'s)', async () => {
    await page.click('#novalidate-send');
    submits++; perPath['/demo/forms']++;
    await eventually(() => assert.equal(formEvents().length, 3));
    assert.equal(await page.evaluate(() => __submits.novalidate), 1);
  });

  await check('a form that really posts navigates to its thanks page; its event leaves with the page', async () => {
    await page.click('#real-send');
    submits++; perPath['/demo/forms']++;
    await page.waitForSelector('#thanks');
    const post = requests.find(r => r.method === 'POST' && r.url === `${http}/demo/forms-thanks`);
    assert.ok(post, 'the form posted to its action');
    assert.ok(post.body.includes(SECRET), 'the form\'s own POST carries its fields (the control)');
    await eventually(() => assert.equal(events().filter(e => e.e === 'pageview').length, 2));
    // Beacons sent while a page unloads may be missed by Playwright: the
    // API below counts this one.
    log(`   form events seen on the wire so far: ${formEvents().length} (of ${submits})`);
    await page.goto('about:blank');
  });

  await check('the module before the tracker: a submit waits in tally.q and is sent once the tracker starts', async () => {
    const seenBefore = formEvents().length;
    const q = await context();
    await q.page.goto(`${http}/demo/forms-queue`);
    await q.page.click('#spa-send');
    submits++; perPath['/demo/forms-queue']++;
    assert.deepEqual(await q.page.evaluate(() => window.tally.q.map(x => [x[0], x[1].props])),
      [[EVENT, { path: '/demo/forms-queue' }]]);
    await sleep(500);
    assert.equal(formEvents().length, seenBefore, 'nothing sent without the tracker');
    await q.page.evaluate(() => addTracker());
    await eventually(() => assert.equal(formEvents().filter(e => e.p.props.path === '/demo/forms-queue').length, 1));
    await q.page.goto('about:blank');
    await q.ctx.close();
  });

  await check('a page without /forms.js: the form is submitted, no form event', async () => {
    const before = formEvents().length;
    const n = await context();
    await n.page.goto(`${http}/demo/forms-none`);
    await eventually(() => assert.ok(events().some(e => e.e === 'pageview' && e.u.endsWith('/demo/forms-none'))));
    await n.page.click('#spa-send');
    await sleep(1_000);
    assert.equal(await n.page.evaluate(() => __submits.spa), 1, 'the page saw its submit');
    assert.equal(await n.page.evaluate(() => typeof window.tallyForms), 'undefined');
    assert.equal(formEvents().length, before);
    await n.ctx.close();
  });

  await check('localStorage.tally_ignore = "true": the page sends nothing, submits included', async () => {
    const before = requests.filter(r => new URL(r.url).pathname === '/collect').length;
    // (Init scripts run on about:blank too, which has no storage.)
    const ig = await context(() => { if (location.protocol === 'http:') localStorage.setItem('tally_ignore', 'true'); });
    await ig.page.goto(`${http}/demo/forms`);
    await ig.page.click('#spa-send');
    await ig.page.click('#novalidate-send');
    await sleep(1_000);
    assert.equal(await ig.page.evaluate(() => __submits.spa + __submits.novalidate), 2);
    await ig.page.goto('about:blank');
    await sleep(500);
    assert.equal(requests.filter(r => new URL(r.url).pathname === '/collect').length, before);
    await ig.ctx.close();
  });

  await check('no request sent to Tally, nor any other but the real form\'s own POST, holds a secret or a field name', async () => {
    const toTally = requests.filter(r => r.url.startsWith(http) && !/^\/demo\//.test(new URL(r.url).pathname));
    assert.ok(toTally.length >= 8, `${toTally.length} requests to Tally recorded`);
    const formOwn = r => r.method === 'POST' && r.url === `${http}/demo/forms-thanks` && r.type === 'document';
    for (const r of requests.filter(x => !formOwn(x))) {
      for (const needle of NEEDLES) {
        assert.ok(!r.url.includes(needle), `${r.method} ${r.url} holds ${needle}`);
        assert.ok(!r.body.includes(needle), `${r.method} ${r.url}'s body holds ${needle}`);
      }
    }
    log(`   ${requests.length} requests checked (${toTally.length} to Tally), ${formEvents().length} form events on the wire`);
  });

  await check('tally goal add --event "Form: Submission"', async () => {
    assert.match(await tallyCli(ready, ['goal', 'add', '--site', 'demo', '--event', EVENT]), /goal added/);
  });

  await check('the API counts exactly the submissions made: events, props:path and the goal', async () => {
    log(`   submissions made on tracked pages: ${submits} ${JSON.stringify(perPath)}`);
    const ev = await eventually(async () => {
      const b = await api('breakdown/events?period=today');
      const row = b.results.find(r => r.value === EVENT);
      assert.equal(row && row.events, submits, JSON.stringify(b.results));
      return b;
    });
    assert.deepEqual(ev.results.map(r => r.value), [EVENT], 'no other custom event');
    const paths = await api(`breakdown/props:path?period=today&filters=${encodeURIComponent(`event==${EVENT}`)}`);
    // Rows with events: the form events by path (page views have no `path`
    // property: the `(none)` row holds them, with no event).
    const got = Object.fromEntries(paths.results.filter(r => r.events > 0).map(r => [r.value, r.events]));
    assert.deepEqual(got, perPath);
    const goals = await api('breakdown/goals?period=today');
    const g = goals.results.find(r => r.value === EVENT);
    assert.equal(g && g.conversions, submits, JSON.stringify(goals.results));
    const answers = JSON.stringify([ev, paths, goals]);
    for (const needle of NEEDLES) assert.ok(!answers.includes(needle), `an answer holds ${needle}`);
  });

  await check('no page errors; ingest rejected nothing', async () => {
    assert.deepEqual(errors, []);
    const c = (await (await fetch(`${http}/health`)).json()).counters;
    assert.deepEqual({ rejected: c.rejected, failed: c.failed }, { rejected: 0, failed: 0 });
  });
  await ctx.close();
}

await runTest(main, async () => { if (browser) await browser.close(); });
