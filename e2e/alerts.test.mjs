#!/usr/bin/env node
// Traffic alerts (issue 23, item 2), in Chromium: the console's "Alerts"
// tab against `tally dev` and the CLI.
//
// Signed in to the console as the demo owner, the demo site's Alerts
// tab shows the defaults (never saved, no secret). Saving a plain
// http webhook to another host, then a spike threshold of 100 %, shows
// the API's 400 message under the form, and `tally alert show` still says
// nothing is set. Saving alerts on, spikes only, a minimum volume,
// thresholds, a cooldown, an address and a webhook URL on a local
// receiver (`tally dev` accepts plain http to this machine) shows the
// signing secret and the URL's scheme and host only; a reload shows the
// same values; `tally alert show` agrees field by field, secret included.
// Rotating the secret changes it in the page and in `tally alert show`,
// the URL kept. `tally alert run --at` three hours on judges the demo site
// (alerts on; with no eight-week baseline nothing fires, the receiver gets
// nothing), where before the save it judged none. The delivery log table
// is empty. No console errors.
//
//   node e2e/alerts.test.mjs

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  TIMEOUT, TALLY_BIN, check, dataDir, eventually, launchChromium, log, runTest, startTally, tallyCli,
} from './harness.mjs';

const OPS = 'ops@example.com';
const browsers = [];
const servers = [];
let ready, http;

const tally = args => tallyCli(ready, args);
const tid = id => `[data-testid="${id}"]`;
/** `tally alert show --site demo` as {field: value}. */
async function show() {
  const out = await tally(['alert', 'show', '--site', 'demo']);
  if (/^no alert settings/.test(out)) return null;
  return Object.fromEntries(out.trim().split('\n').map(l => l.split('\t')));
}
/** `tally alert run` at `at` for the demo site: its summary line. */
async function runAlerts(at) {
  const out = await tally(['alert', 'run', '--at', at, '--site', 'demo', '--data-dir', dataDir, '--public-url', http]);
  return out.split('\n').find(l => l.startsWith('alerts: ')) || out;
}

async function main() {
  log(`tally: ${TALLY_BIN}`);
  ready = await startTally();
  ({ http } = ready);
  assert.ok(ready.login && ready.password, `no demo login in the ready line: ${JSON.stringify(ready)}`);

  // A local receiver: every request it gets is kept.
  const received = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', c => { body += c; });
    req.on('end', () => { received.push({ path: req.url, body }); res.end('ok'); });
  });
  servers.push(receiver);
  await new Promise(r => receiver.listen(0, '127.0.0.1', r));
  const hookOrigin = `http://127.0.0.1:${receiver.address().port}`;
  const hook = `${hookOrigin}/tally/alerts-hook`;
  const later = new Date(Math.floor(Date.now() / 36e5) * 36e5 + 3 * 36e5 + 20 * 6e4).toISOString();

  await check(`before any save, \`tally alert run --at ${later}\` judges no site`, async () => {
    assert.match(await runAlerts(later), /^alerts: 0 judged, 0 fired/);
  });

  const browser = await launchChromium();
  browsers.push(browser);
  const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  ctx.setDefaultTimeout(TIMEOUT);
  const con = await ctx.newPage();
  const problems = [];
  con.on('pageerror', e => problems.push(`pageerror: ${e}`));
  // A 401 probe of `me` before signing in, and the 400s this test asks for.
  const expected = m => /status of (401|400)/.test(m.text());
  con.on('console', m => { if (m.type() === 'error' && !expected(m)) problems.push(`console: ${m.text()}`); });
  con.on('dialog', d => d.accept());
  const formError = async () => (await con.isVisible(tid('form-error'))) ? con.textContent(tid('form-error')) : '';
  const shown = () => con.evaluate(() => {
    const el = id => document.querySelector(`[data-testid="${id}"]`);
    return {
      enabled: el('alert-enabled').checked,
      watch: el('alert-watch').value,
      min_volume: el('alert-min-volume').value,
      spike_pct: el('alert-spike-pct').value,
      spread_pct: el('alert-spread-pct').value,
      drop_pct: el('alert-drop-pct').value,
      cooldown_hours: el('alert-cooldown-hours').value,
      emails: el('alert-emails').value,
      webhook: el('alert-webhook-now').textContent,
      slack: el('alert-slack-now').textContent,
      secret: el('alert-secret') ? el('alert-secret').textContent : null,
    };
  });

  await check('console: the owner opens the demo site\'s Alerts tab: the defaults, never saved, no secret', async () => {
    await con.goto(`${http}/console`);
    await con.fill(tid('login-email'), ready.login);
    await con.fill(tid('login-password'), ready.password);
    await con.click(tid('login-submit'));
    await con.waitForSelector(tid('me-email'));
    await con.goto(`${http}/console#/sites/demo/alerts`);
    await con.waitForSelector(tid('alert-form'));
    assert.equal(await con.getAttribute(tid('tab-alerts'), 'aria-current'), 'page');
    assert.match(await con.textContent(tid('alert-model')), /same hour of the week .* last 8 weeks/);
    assert.deepEqual(await shown(), {
      enabled: false, watch: 'both', min_volume: '20', spike_pct: '300', spread_pct: '500', drop_pct: '30', cooldown_hours: '6',
      emails: '', webhook: '', slack: '', secret: null,
    });
    assert.equal(await con.isVisible(tid('alerts-table-empty')), true);
    assert.equal(await con.isVisible(tid('deliveries-table-empty')), true);
  }, { required: true });

  await check('console: an http:// webhook to another host and a spike of 100 % show the API\'s 400 message; nothing is stored', async () => {
    await con.check(tid('alert-enabled'));
    await con.fill(tid('alert-emails'), OPS);
    await con.fill(tid('alert-webhook-url'), 'http://hooks.example.com/tally');
    await con.click(tid('alert-save'));
    await eventually(async () => assert.equal(await formError(), 'invalid webhook URL: not https'), TIMEOUT);
    await con.fill(tid('alert-webhook-url'), '');
    await con.fill(tid('alert-spike-pct'), '100');
    await con.click(tid('alert-save'));
    await eventually(async () => assert.equal(await formError(), 'the spike factor must be above 100 %'), TIMEOUT);
    assert.equal(await show(), null);
  }, { required: true });

  let secret;
  const want = { enabled: true, watch: 'spike', min_volume: '30', spike_pct: '250', spread_pct: '400', drop_pct: '30', cooldown_hours: '12', emails: OPS };
  await check('console: saving alerts with a webhook on a local receiver shows its secret and the URL without its path', async () => {
    await con.selectOption(tid('alert-watch'), 'spike');
    await con.fill(tid('alert-min-volume'), want.min_volume);
    await con.fill(tid('alert-spike-pct'), want.spike_pct);
    await con.fill(tid('alert-spread-pct'), want.spread_pct);
    await con.fill(tid('alert-cooldown-hours'), want.cooldown_hours);
    await con.fill(tid('alert-webhook-url'), hook);
    await con.click(tid('alert-save'));
    await con.waitForSelector(tid('alert-secret'));
    const s = await shown();
    secret = s.secret;
    assert.match(secret, /^whsec_[0-9a-f]{64}$/);
    assert.deepEqual(s, { ...want, webhook: `${hookOrigin}/\u2026`, slack: '', secret });
    assert.ok(!(await con.content()).includes('alerts-hook'), 'the URL\'s path is not in the page');
  }, { required: true });

  await check('console: a reload shows the same settings', async () => {
    await con.reload();
    await con.waitForSelector(tid('alert-secret'));
    assert.deepEqual(await shown(), { ...want, webhook: `${hookOrigin}/\u2026`, slack: '', secret });
  }, { required: true });

  await check('`tally alert show` agrees with the console, secret included', async () => {
    assert.deepEqual(await show(), {
      enabled: 'true',
      model: 'watch=Spike min_volume=30 spike_pct=250 spread_pct=400 drop_pct=30 cooldown_hours=12',
      emails: OPS,
      slack: '',
      webhook: `${hookOrigin}/\u2026`,
      webhook_secret: secret,
    });
  }, { required: true });

  await check('console: rotating the secret changes it in the page and in `tally alert show`, the URL kept', async () => {
    await con.click(tid('alert-rotate'));
    await eventually(async () => {
      const now = (await shown()).secret;
      assert.ok(now && now !== secret, 'a new secret');
    }, TIMEOUT);
    const rotated = (await shown()).secret;
    assert.match(rotated, /^whsec_[0-9a-f]{64}$/);
    const cli = await show();
    assert.equal(cli.webhook_secret, rotated);
    assert.equal(cli.webhook, `${hookOrigin}/\u2026`);
  });

  await check(`\`tally alert run --at ${later}\` judges the demo site now; no baseline, nothing fired or sent`, async () => {
    assert.match(await runAlerts(later), /^alerts: 1 judged, 0 fired/);
    assert.deepEqual(received, []);
  });

  await check('console: no console errors', () => assert.deepEqual(problems, []));
}

runTest(main, async () => {
  for (const b of browsers) await b.close();
  for (const s of servers) s.close();
});
