// Records the headers Chromium really sends with Tally's beacon, for the
// false-positive corpus tests/fixtures/browser_headers.json (read by
// tests/tests/tracking/bots.rs: no set may be dropped as a bot).
//
//   node e2e/record_headers.mjs > tests/fixtures/browser_headers.json
//
// A local page sends the tracker's two kinds of request (sendBeacon with a
// text/plain Blob, and fetch with keepalive, its fallback) to a local
// server that keeps each request's headers as received (minus host,
// connection, content-length, origin and referer, which name this test
// server). Chromium (Debian's, as .ci/e2e installs it) runs once per
// language of a country and per device: desktop, and phone emulation
// (Playwright's isMobile, touch, a phone viewport and an Android Chrome
// user agent), 50 locales, under the regular Chrome user agent the e2e
// harness sets (headless Chromium's own names HeadlessChrome). Each set is
// paired in turn with one of 12 residential or mobile ISP addresses of 7
// countries, IPv4 and IPv6 (as @ip-location-db/asn maps them), so the test
// replays it from a person's network.
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Residential and mobile ISP addresses (ASN and ISP in the comment).
const COUNTRIES = [
  ['en-US', '73.0.0.1'], // AS7922 Comcast
  ['en-GB', '86.0.0.1'], // AS5089 Virgin Media
  ['de-DE', '84.128.0.1'], // AS3320 Deutsche Telekom
  ['fr-FR', '90.0.0.1'], // AS3215 Orange
  ['pt-BR', '189.0.0.1'], // AS26599 Telefonica Brasil
  ['hi-IN', '49.36.0.1'], // AS55836 Reliance Jio (mobile)
  ['ja-JP', '2409:4000::1'], // AS55836 Jio IPv6 (mobile): an IPv6 case
  ['en-US', '2601::1'], // AS7922 Comcast IPv6
  ['de-DE', '2003::1'], // AS3320 Deutsche Telekom IPv6
  ['en-US', '2607:fb90::1'], // AS21928 T-Mobile USA (mobile)
  ['en-GB', '2a00:23c0::1'], // AS5400 British Telecom IPv6
  ['es-MX', '2806:1000::1'], // AS8151 Uninet (Telmex) IPv6
];
const LOCALES = ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'es-ES', 'es-MX', 'pt-BR', 'it-IT', 'nl-NL', 'pl-PL',
  'sv-SE', 'tr-TR', 'ru-RU', 'uk-UA', 'ar-EG', 'hi-IN', 'id-ID', 'ja-JP', 'ko-KR', 'zh-CN', 'zh-TW', 'vi-VN', 'th-TH', 'he-IL', 'fa-IR',
  'en-AU', 'en-CA', 'en-IN', 'en-NG', 'en-ZA', 'fr-CA', 'de-AT', 'de-CH', 'it-CH', 'es-AR', 'es-CO', 'pt-PT', 'da-DK', 'nb-NO', 'fi-FI',
  'cs-CZ', 'sk-SK', 'hu-HU', 'ro-RO', 'bg-BG', 'el-GR', 'hr-HR', 'sr-RS', 'ms-MY', 'fil-PH'];
const ADDRESSES = COUNTRIES.map(([, ip]) => ip);

const got = [];
const server = http.createServer((req, res) => {
  if (req.method === 'POST') {
    const headers = { ...req.headers };
    for (const k of ['host', 'connection', 'content-length', 'origin', 'referer']) delete headers[k];
    got.push(headers);
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end('{}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!doctype html><title>beacon</title><script>
    navigator.sendBeacon('/collect', new Blob(['{}'], { type: 'text/plain' }));
    fetch('/collect', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, keepalive: true, body: '{}' });
  </script>`);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/`;
const version = execFileSync(CHROMIUM, ['--version']).toString().trim();
const major = (/(\d+)\.\d+\.\d+\.\d+/.exec(version) || [])[1] || '130';
const desktopUa = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
const phoneUa = `Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Mobile Safari/537.36`;

const corpus = [];
// Chromium's own agent says HeadlessChrome (a bot by its user agent, rightly):
// the regular Chrome agent is set as the e2e harness sets it.
for (const [launchName, args] of [['chrome agent (--user-agent)', [`--user-agent=${desktopUa}`]]]) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', ...args] });
  for (const [i, locale] of LOCALES.entries()) {
    for (const device of ['desktop', 'mobile']) {
      const options = device === 'mobile'
        ? { locale, userAgent: phoneUa, isMobile: true, hasTouch: true, viewport: { width: 412, height: 915 }, deviceScaleFactor: 2.6 }
        : { locale };
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const before = got.length;
      await page.goto(url);
      for (let t = 0; t < 50 && got.length < before + 2; t++) await page.waitForTimeout(20);
      await context.close();
      for (const [j, headers] of got.slice(before).entries()) {
        corpus.push({
          source: `${version}, ${launchName}, ${j === 0 ? 'sendBeacon' : 'fetch keepalive'}, locale ${locale}`,
          device,
          ip: ADDRESSES[(i + j) % ADDRESSES.length],
          headers,
        });
      }
    }
  }
  await browser.close();
}
server.close();
process.stdout.write(JSON.stringify(corpus, null, 1) + '\n');
process.stderr.write(`${corpus.length} header sets recorded\n`);
