#!/usr/bin/env node
// End-to-end test of the console (`/console`) in a real browser (Debian's
// Chromium driven by playwright-core): first run with a setup token, 2FA on
// and a sign-in with a code, a site added and its snippet's first page view
// seen live, a goal and a funnel made in the UI and read back through the
// stats API, a viewer invited and accepted in a second browser, who sees no
// configuration controls and whose configure request answers 403.
//
//   node e2e/console.test.mjs
//
// Environment: as e2e/dashboard.test.mjs (TALLY_BIN, CHROMIUM_PATH,
// E2E_SCREENSHOTS "0" to skip writing docs/screenshots/console-*.png,
// E2E_HEADED).

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  TIMEOUT, TALLY_BIN, check, eventually, launchChromium, log, repo, run, runTest, startTally,
} from './harness.mjs';

const SCREENSHOTS = process.env.E2E_SCREENSHOTS !== '0';
const SHOT_DIR = path.join(repo, 'docs/screenshots');
const OWNER = { email: 'owner@example.com', password: 'correct horse battery' };
const VIEWER = { email: 'viewer@example.com', password: 'viewer password 42' };
const SITE = { id: 'shop', domain: 'shop.example', zone: 'Europe/Berlin' };
const UA = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';

// ---- TOTP (RFC 6238: HMAC-SHA1, 30 s steps, 6 digits) ---------------------------
function base32Decode(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0, value = 0;
  const out = [];
  for (const c of text.replace(/=+$/, '').toUpperCase()) {
    const i = alphabet.indexOf(c);
    if (i < 0) throw new Error(`not base32: ${c}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) { out.push((value >>> (bits - 8)) & 0xff); bits -= 8; }
  }
  return Buffer.from(out);
}
const stepNow = () => Math.floor(Date.now() / 1000 / 30);
function totp(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32Decode(secret)).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const n = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) | mac[offset + 3];
  return String(n % 1_000_000).padStart(6, '0');
}

// ---- helpers -------------------------------------------------------------------
let ready, http, browser;
const tid = id => `[data-testid="${id}"]`;
/** Waits until the console shows `view` and has loaded it. */
async function view(page, name) {
  await page.waitForSelector(`#app[data-view="${name}"][data-busy="false"]`, { timeout: TIMEOUT });
}
async function shot(page, file) {
  if (!SCREENSHOTS) return;
  try {
    mkdirSync(SHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SHOT_DIR, file), fullPage: true });
    log(`   wrote docs/screenshots/${file}`);
  } catch (e) { log(`   could not write docs/screenshots/${file}: ${e.message} (skipped)`); }
}
/** Posts an event as a page of the site would (Plausible's Events API). */
async function sendEvent(name, pathname, props) {
  const res = await fetch(`${http}/api/event`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': UA, origin: `https://${SITE.domain}` },
    body: JSON.stringify({ name, url: `https://${SITE.domain}${pathname}`, domain: SITE.domain, ...(props ? { props } : {}) }),
  });
  assert.equal(res.status, 202, `POST /api/event answered ${res.status}: ${await res.text()}`);
  assert.equal(res.headers.get('x-plausible-dropped'), null, `the ${name} on ${pathname} was dropped`);
}
/** Problems a page reported: console errors (CSP violations included)
 *  and uncaught exceptions. */
function watch(page, label, problems) {
  // A refused request is logged by Chromium as "Failed to load resource":
  // the 401 of `GET me` before signing in and the test's own 403s are
  // expected; anything else (a CSP violation, a 404, a 500) is not.
  page.on('console', m => {
    if (m.type() !== 'error') return;
    if (/^Failed to load resource: the server responded with a status of 40[13]\b/.test(m.text())) return;
    problems.push(`${label} console: ${m.text()}`);
  });
  page.on('pageerror', e => problems.push(`${label} exception: ${e.message}`));
}
/** Every configuration control on the page. */
const configControls = page => page.locator('#app [data-config], #app form, [data-testid="add-site"]').count();

// ---- the run -------------------------------------------------------------------
async function main() {
  await check('tally dev starts without a demo owner (--no-demo-owner)', async () => {
    ready = await startTally(['--no-demo-owner']);
    http = ready.http;
    assert.match(http, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(ready.login, undefined, 'no demo login on the ready line');
    log(`   ${http}`);
  }, { required: true });

  let setupToken;
  await check('tally setup-token prints a single-use token', async () => {
    const { stdout } = await run(TALLY_BIN, ['setup-token', '--dynamodb-endpoint', ready.dynamodb, '--table', ready.table], {
      env: { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: 'us-east-1' },
    });
    setupToken = stdout.split('\n')[0].trim();
    assert.match(setupToken, /^tsu_[0-9a-f]{40}$/, stdout);
  }, { required: true });

  await check('GET /console: the page under a strict CSP (hashes, no unsafe-inline, no other origin)', async () => {
    const res = await fetch(`${http}/console`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/html/);
    const csp = res.headers.get('content-security-policy');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert.match(csp, /connect-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = await res.text();
    assert.doesNotMatch(html, /<script src|<link rel="stylesheet"|https:\/\/(?!example)/);
  });

  browser = await launchChromium();
  const problems = [];
  const ownerCtx = await browser.newContext({ viewport: { width: 1280, height: 820 } });
  const owner = await ownerCtx.newPage();
  watch(owner, 'owner', problems);
  owner.setDefaultTimeout(TIMEOUT);

  await check('first run: the setup view, then the owner is created and signed in', async () => {
    await owner.goto(`${http}/console`);
    await view(owner, 'setup');
    await owner.getByLabel('Setup token').fill(setupToken);
    await owner.getByLabel('Your email').fill(OWNER.email);
    await owner.getByLabel('Password').fill(OWNER.password);
    await owner.click(tid('setup-submit'));
    await view(owner, 'sites');
    assert.equal(await owner.textContent(tid('me-email')), OWNER.email);
    const cookies = await ownerCtx.cookies();
    const session = cookies.find(c => c.name === 'tally_session');
    assert.ok(session && session.httpOnly && session.sameSite === 'Strict', JSON.stringify(cookies));
  }, { required: true });

  await check('setup is single use: GET setup says it is not needed any more', async () => {
    const res = await fetch(`${http}/api/console/setup`);
    assert.deepEqual(await res.json(), { needed: false });
  });

  let secret, enabledStep;
  await check('2FA: the secret and the otpauth URL are shown as text; a computed code turns it on', async () => {
    await owner.click(tid('nav-account'));
    await view(owner, 'account');
    assert.equal(await owner.getAttribute(tid('totp-status'), 'data-on'), 'false');
    await owner.click(tid('totp-setup'));
    secret = (await owner.textContent(tid('totp-secret'))).trim();
    const url = (await owner.textContent(tid('totp-url'))).trim();
    assert.match(secret, /^[A-Z2-7]{16,}$/);
    assert.ok(url.startsWith('otpauth://totp/') && url.includes(`secret=${secret}`), url);
    enabledStep = stepNow();
    await owner.getByLabel('Code from the app').fill(totp(secret, enabledStep));
    await owner.click(tid('totp-enable'));
    await owner.waitForSelector(`${tid('totp-status')}[data-on="true"]`);
  }, { required: true });

  await check('sessions: this browser is listed as the current session', async () => {
    const rows = await owner.$$eval(tid('session-row'), rs => rs.map(r => r.dataset.current));
    assert.ok(rows.includes('true'), JSON.stringify(rows));
  });

  await check('sign out, then sign in with the password and a 6-digit code', async () => {
    await owner.click(tid('signout'));
    await view(owner, 'login');
    assert.equal(await owner.isVisible('#nav'), false);
    await owner.getByLabel('Email').fill(OWNER.email);
    await owner.getByLabel('Password').fill(OWNER.password);
    await shot(owner, 'console-login.png');
    await owner.click(tid('login-submit'));
    await owner.waitForSelector(tid('login-code'));
    // The code of the step after the one that turned 2FA on: a step is
    // good once, and the next one is within the allowed drift.
    await owner.fill(tid('login-code'), totp(secret, Math.max(enabledStep + 1, stepNow())));
    await owner.click(tid('login-code-submit'));
    await view(owner, 'sites');
  }, { required: true });

  await check('add a site: domains, a time zone from Intl.supportedValuesOf, an id', async () => {
    await owner.click(tid('add-site'));
    await view(owner, 'add-site');
    const zones = await owner.$$eval(`${tid('site-timezone')} option`, os => os.length);
    assert.ok(zones > 300, `only ${zones} time zones`);
    await owner.getByLabel('Domains').fill(SITE.domain);
    await owner.selectOption(tid('site-timezone'), SITE.zone);
    await owner.fill(tid('site-id'), SITE.id);
    await owner.click(tid('site-create'));
    await view(owner, 'install');
  }, { required: true });

  await check('the snippet is shown, and the live check waits for the first page view', async () => {
    const snippet = await owner.textContent(tid('snippet'));
    assert.match(snippet, /<script[^>]*data-site="shop"[^>]*><\/script>/, snippet);
    assert.equal(await owner.getAttribute(tid('first-pageview'), 'data-state'), 'waiting');
  });

  await check('a page view of the site turns the live check green', async () => {
    await sendEvent('pageview', '/');
    await owner.waitForSelector(`${tid('first-pageview')}[data-state="seen"]`, { timeout: 20_000 });
    const color = await owner.$eval(tid('first-pageview'), el => getComputedStyle(el).color);
    assert.notEqual(color, await owner.$eval('body', el => getComputedStyle(el).color), 'the check changed colour');
  });

  await check('the sites list: every site, the role, a dashboard link, visitors from GET /api/overview', async () => {
    await owner.click(tid('nav-sites'));
    await view(owner, 'sites');
    const rows = await owner.$$eval(tid('site-row'), rs => rs.map(r => ({
      site: r.dataset.site, role: r.querySelector('[data-testid="site-role"]').textContent,
      link: r.querySelector('[data-testid="site-dashboard"]').getAttribute('href'),
    })));
    const shop = rows.find(r => r.site === SITE.id);
    assert.ok(shop, JSON.stringify(rows));
    assert.equal(shop.role, 'owner');
    assert.equal(shop.link, `/?site=${SITE.id}`);
    assert.ok(rows.some(r => r.site === 'demo'), 'the demo site is listed for the instance owner');
    await owner.waitForSelector(`${tid('site-row')}[data-site="${SITE.id}"][data-loaded="true"]`);
    assert.equal(await owner.textContent(`${tid('site-row')}[data-site="${SITE.id}"] ${tid('site-today')}`), '1');
    await shot(owner, 'console-sites.png');
  });

  await check('general settings: the site as added (domains, time zone)', async () => {
    await owner.goto(`${http}/console#/sites/${SITE.id}/general`);
    await view(owner, 'site-general');
    assert.equal((await owner.inputValue(tid('general-domains'))).trim(), SITE.domain);
    assert.equal(await owner.inputValue(tid('general-timezone')), SITE.zone);
    await owner.fill(tid('general-exclude-paths'), '/admin/*');
    await owner.click(tid('general-save'));
    await owner.waitForSelector('#toast:not([hidden])');
    await owner.waitForSelector('#toast', { state: 'hidden' });
    await shot(owner, 'console-settings.png');
  });

  await check('goals: an event goal and a page goal made in the UI are listed', async () => {
    await owner.click(tid('tab-goals'));
    await view(owner, 'site-goals');
    await owner.fill(tid('goal-name'), 'Signups');
    await owner.selectOption(tid('goal-kind'), 'event');
    await owner.fill(tid('goal-value'), 'Signup');
    await owner.click(tid('goal-add'));
    await owner.waitForSelector(`${tid('goal-row')}[data-name="Signups"]`);
    await owner.selectOption(tid('goal-kind'), 'page');
    await owner.fill(tid('goal-value'), '/pricing');
    await owner.click(tid('goal-add'));
    await owner.waitForSelector(`${tid('goal-row')}[data-name="Visit /pricing"]`);
  });

  await check('funnels: a funnel made in the UI is listed with its steps', async () => {
    await owner.click(tid('tab-funnels'));
    await view(owner, 'site-funnels');
    await owner.fill(tid('funnel-name'), 'Checkout');
    await owner.fill(tid('funnel-steps'), '/\n/pricing\nevent:Signup');
    await owner.click(tid('funnel-add'));
    await owner.waitForSelector(`${tid('funnel-row')}[data-name="Checkout"]`);
    const steps = await owner.$$eval(`${tid('funnel-row')}[data-name="Checkout"] li`, ls => ls.map(l => l.textContent));
    assert.equal(steps.length, 3, JSON.stringify(steps));
  });

  let key;
  await check('API keys: a key is shown once', async () => {
    await owner.click(tid('tab-keys'));
    await view(owner, 'site-keys');
    await owner.fill(tid('key-label'), 'e2e');
    await owner.click(tid('key-create'));
    key = (await owner.textContent(tid('key-secret'))).trim();
    assert.ok(key.length > 20, key);
    await owner.waitForSelector(tid('key-row'));
  });

  await check('shared links: a link made in the UI is shown once and reads the site', async () => {
    await owner.click(tid('tab-shares'));
    await view(owner, 'site-shares');
    await owner.fill(tid('share-label'), 'Board');
    await owner.click(tid('share-create'));
    const link = (await owner.textContent(tid('share-url'))).trim();
    const token = (/share=(ts_[0-9a-f]{40}\.[^&]+)/.exec(link) || [])[1];
    assert.ok(token, link);
    await owner.waitForSelector(tid('share-row'));
    const res = await fetch(`${http}/api/sites/${SITE.id}/access`, { headers: { authorization: `Bearer ${token}` } });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.access, 'share', JSON.stringify(body));
  });

  await check('the goals and the funnel reach the stats API (read with the new key)', async () => {
    assert.ok(key, 'no key');
    await sendEvent('pageview', '/pricing');
    await sendEvent('Signup', '/pricing');
    const get = async p => {
      const res = await fetch(`${http}/api/sites/${SITE.id}/${p}`, { headers: { authorization: `Bearer ${key}` } });
      const body = await res.json();
      assert.equal(res.status, 200, `${p}: ${JSON.stringify(body)}`);
      return body;
    };
    const funnels = await get('funnels');
    assert.ok(JSON.stringify(funnels).includes('Checkout'), JSON.stringify(funnels));
    await eventually(async () => {
      const goals = await get('breakdown/goals?period=today');
      const rows = goals.results || goals.rows || goals;
      const names = rows.map(r => r.goal || r.name || r.value);
      assert.ok(names.includes('Signups') && names.includes('Visit /pricing'), JSON.stringify(goals));
    });
  });

  let inviteLink;
  await check('members: an invitation for a viewer gives a copyable link', async () => {
    await owner.goto(`${http}/console#/sites/${SITE.id}/members`);
    await view(owner, 'site-members');
    assert.ok(await owner.locator(`${tid('member-row')}`).count() >= 0);
    await owner.selectOption(tid('invite-role'), 'viewer');
    await owner.click(tid('invite-create'));
    inviteLink = (await owner.textContent(tid('invite-link'))).trim();
    assert.match(inviteLink, new RegExp(`^${http}/console#(/invite/|invite=)ti_[0-9a-f]{40}\\.${SITE.id}$`), inviteLink);
    assert.ok(await owner.isVisible(tid('invite-link-copy')));
  }, { required: true });

  const viewerCtx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const viewer = await viewerCtx.newPage();
  watch(viewer, 'viewer', problems);
  viewer.setDefaultTimeout(TIMEOUT);

  await check('a second browser accepts the invitation as a new user', async () => {
    await viewer.goto(inviteLink);
    await view(viewer, 'invite');
    await viewer.getByLabel('Your email').fill(VIEWER.email);
    await viewer.getByLabel('Choose a password').fill(VIEWER.password);
    await viewer.click(tid('invite-accept'));
    await viewer.waitForSelector(`#app[data-view^="site-"][data-busy="false"]`);
    assert.equal(await viewer.textContent(tid('my-role')), 'viewer');
  }, { required: true });

  await check('the viewer sees no configuration controls (site page, sites list)', async () => {
    assert.equal(await configControls(viewer), 0, 'controls on the site page');
    const tabs = await viewer.$$eval('.tabs a', as => as.map(a => a.dataset.testid));
    assert.deepEqual(tabs, ['tab-goals', 'tab-funnels']);
    await viewer.waitForSelector(`${tid('goal-row')}[data-name="Signups"]`);
    assert.equal(await viewer.locator(tid('goal-delete')).count(), 0);
    await viewer.click(tid('tab-funnels'));
    await view(viewer, 'site-funnels');
    assert.equal(await configControls(viewer), 0, 'controls on the funnels tab');
    await viewer.click(tid('nav-sites'));
    await view(viewer, 'sites');
    const rows = await viewer.$$eval(tid('site-row'), rs => rs.map(r => r.dataset.site));
    assert.deepEqual(rows, [SITE.id]);
    assert.equal(await configControls(viewer), 0, 'controls on the sites list');
    const overflow = await viewer.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `the page is ${overflow}px wider than a phone`);
  });

  await check("a configure request from the viewer's session answers 403", async () => {
    const answer = await viewer.evaluate(async site => {
      const me = await (await fetch('/api/console/me')).json();
      const res = await fetch(`/api/console/sites/${site}/goals`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf },
        body: JSON.stringify({ event: 'Sneaky' }),
      });
      return { status: res.status, body: await res.json() };
    }, SITE.id);
    assert.equal(answer.status, 403, JSON.stringify(answer));
    assert.equal(answer.body.error.code, 'forbidden');
  });

  await check("the viewer reads the site's reports with the session cookie (the dashboard link's credential), not another site's", async () => {
    const answer = await viewer.evaluate(async site => {
      const mine = await fetch(`/api/sites/${site}/stats?period=today`);
      const other = await fetch('/api/sites/demo/stats?period=today');
      return { mine: mine.status, body: await mine.json(), other: other.status };
    }, SITE.id);
    assert.equal(answer.mine, 200, JSON.stringify(answer));
    assert.ok(answer.body.results.visitors >= 1, JSON.stringify(answer.body));
    assert.equal(answer.other, 403);
  });

  await check("the site's Dashboard link opens the dashboard signed in (no key asked)", async () => {
    await viewer.goto(`${http}/console#/sites/${SITE.id}/goals`);
    await view(viewer, 'site-goals');
    assert.equal(await viewer.getAttribute(tid('site-dashboard'), 'href'), `/?site=${SITE.id}`);
    await viewer.click(tid('site-dashboard'));
    await viewer.waitForURL(`${http}/?site=${SITE.id}`);
    await viewer.waitForSelector('#app[data-busy="false"] [data-testid="total-visitors"]');
    assert.equal(await viewer.locator('[data-testid="key-input"]:visible').count(), 0, 'the key form is shown');
    const visitors = await viewer.textContent('[data-testid="total-visitors"] .stat-value');
    assert.ok(Number(visitors.trim()) >= 1, visitors);
  });

  await check('a state-changing request without x-csrf-token answers 403 csrf', async () => {
    const answer = await owner.evaluate(async () => {
      const res = await fetch('/api/console/totp/setup', { method: 'POST' });
      return { status: res.status, body: await res.json() };
    });
    assert.equal(answer.status, 403, JSON.stringify(answer));
    assert.equal(answer.body.error.code, 'csrf');
  });

  await check('the owner sees the viewer among the members, and the audit log', async () => {
    await owner.goto(`${http}/console#/sites/${SITE.id}/members`);
    await owner.reload();
    await view(owner, 'site-members');
    await owner.waitForSelector(`${tid('member-row')}[data-email="${VIEWER.email}"]`);
    assert.equal(await owner.inputValue(`${tid('member-row')}[data-email="${VIEWER.email}"] ${tid('member-role')}`), 'viewer');
    await owner.click(tid('tab-audit'));
    await view(owner, 'site-audit');
    assert.ok(await owner.locator(tid('audit-row')).count() > 0, 'no audit entries');
  });

  await check('made an admin, the viewer sees the configuration controls (and may use them)', async () => {
    await owner.click(tid('tab-members'));
    await view(owner, 'site-members');
    const row = `${tid('member-row')}[data-email="${VIEWER.email}"]`;
    await owner.selectOption(`${row} ${tid('member-role')}`, 'admin');
    await owner.waitForSelector('#toast:not([hidden])');
    await viewer.goto(`${http}/console#/sites/${SITE.id}/goals`);
    await viewer.reload();
    await view(viewer, 'site-goals');
    assert.equal(await viewer.textContent(tid('my-role')), 'admin');
    const tabs = await viewer.$$eval('.tabs a', as => as.map(a => a.dataset.testid));
    assert.deepEqual(tabs, ['tab-general', 'tab-goals', 'tab-funnels', 'tab-shares', 'tab-keys']);
    assert.ok(await viewer.isVisible(tid('goal-form')));
    await viewer.selectOption(tid('goal-kind'), 'event');
    await viewer.fill(tid('goal-value'), 'Newsletter');
    await viewer.click(tid('goal-add'));
    await viewer.waitForSelector(`${tid('goal-row')}[data-name="Newsletter"]`);
  });

  await check('the owner console works at phone width (no sideways scrolling)', async () => {
    await owner.setViewportSize({ width: 390, height: 844 });
    for (const hash of ['#/sites', `#/sites/${SITE.id}/goals`, '#/account']) {
      await owner.goto(`${http}/console${hash}`);
      await owner.waitForSelector('#app[data-busy="false"]');
      const overflow = await owner.evaluate(() => {
        const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
          && !e.closest('.table-wrap, .tabs'));
        return { by: document.documentElement.scrollWidth - window.innerWidth, wide: wide.slice(0, 5).map(e => `${e.tagName}.${e.className}[${e.dataset.testid || ''}]`) };
      });
      assert.ok(overflow.by <= 1, `${hash} is ${overflow.by}px wider than a phone: ${overflow.wide.join(', ')}`);
    }
  });

  await check('no console errors, CSP violations or uncaught exceptions', async () => {
    assert.deepEqual(problems, []);
  });
}

runTest(main, async () => { if (browser) await browser.close(); });
