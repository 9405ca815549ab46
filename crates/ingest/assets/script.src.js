/*
 * Tally tracker — readable, commented copy. DOCUMENTATION ONLY: it is not
 * served. `script.js` next to it is the file served verbatim at GET /script.js;
 * it is this same program hand-compacted (short names, no comments). Change
 * both together; the behaviour must stay identical.
 *
 * Usage:
 *   <script defer data-site="SITE_ID" src="https://ingest.example/script.js"></script>
 * Options (attributes of that tag):
 *   data-site       site id (required; without it the tracker does nothing)
 *   data-api        ingest origin (default: the origin of the script's src)
 *   data-honor-dnt  "true": send nothing when navigator.doNotTrack === "1" or
 *                   navigator.globalPrivacyControl === true
 *   data-hash       "true": hash-based routing; `#/route` is part of the page
 *                   (page views on hashchange, `h: 1` sent so the server keeps
 *                   the fragment in the path)
 * Opt-out: localStorage.tally_ignore = "true" in a browser sends nothing from
 * it (for a site's own staff).
 *
 * Wire format: each event is one POST of JSON.stringify(payload) to
 * `${api}/collect`, via navigator.sendBeacon with a text/plain Blob (a "simple"
 * request, so no CORS preflight), falling back to XMLHttpRequest with
 * Content-Type: text/plain when sendBeacon is missing, throws or returns false.
 *
 *   { s, sid, e, p, u, r, t, sw, sh, tz, eid, ts, h? }
 *   s    site id (string)
 *   sid  session id: 12 chars [0-9a-z]; kept in sessionStorage "_tally_s" as
 *        "<sid>.<lastActivityMs>", renewed after 30 min without a send
 *   e    "pageview" | "event" | "engagement" | "leave" | "show" | "click"
 *   p    pageview   {}
 *        event      {name: string, value?: finite number, props?: object}
 *                   (props passed through as the caller gave them; documented
 *                   as {string: string}, the server validates/truncates)
 *        engagement {timeOnPage: integer seconds, scrollDepth: integer 0..100}
 *        leave      the same as engagement: the beacon sent when the tab is
 *                   hidden or the page unloads (live view)
 *                   With the opt-in Web Vitals module (vitals.js, which
 *                   defines window.tallyVitals), the engagement and leave
 *                   beacons of the document's first page view also carry
 *                   what it returns: {lcp, inp, fcp, ttfb: ms, cls}; later
 *                   (SPA) page views carry none (the metrics belong to the
 *                   document's load).
 *        show       {}: the tab is shown again after a leave (live view)
 *        click      {url: string, kind: "outbound" | "download"}
 *   u    page URL (location.href; for "engagement", "leave" and "show" the URL
 *        of the page view it belongs to, which matters after a popstate
 *        already changed location)
 *   r    referrer of the current page view: document.referrer for the first
 *        page view of the document; for SPA page views, the previous page
 *        view's href (same host, so the server files it as internal/Direct).
 *        Every event of a page view carries that page view's r.
 *   t    document.title
 *   sw, sh  screen.width, screen.height (numbers)
 *   tz   IANA time zone from Intl ("" when unavailable)
 *   eid  12 random chars [0-9a-z] + ts.toString(36): the server can recover ts
 *        from eid.slice(12) (dedupe of a beacon delivered twice)
 *   ts   Date.now() at send (number, ms), the same value that ends eid
 *
 * Engagement rule: one engagement beacon per page view, sent when the page is
 * hidden (visibilitychange -> hidden, or pagehide) as "leave", or before an
 * SPA route change / manual page view as "engagement". timeOnPage is the
 * active (visible) time not yet reported, so the server SUMS timeOnPage over
 * a page view's engagement and leave beacons; scrollDepth is the page view's
 * maximum so far (server takes the max). Before a route change, another
 * "engagement" is sent only when at least 1 s of new active time accrued.
 * Note: the first beacon is sent even with timeOnPage 0, so its mere presence
 * must not mean "not a bounce".
 *
 * Live view: a hide sends a "leave" unless the tab already left (so
 * visibilitychange + pagehide back to back yield one); the next time the tab
 * is shown it sends one "show" (a tab loaded in the background never left,
 * so its first show sends nothing). No timer, no heartbeat: a shown tab
 * sends nothing while idle, and the server counts it as present until five
 * minutes after its last event (docs/API.md, realtime). Writes per page
 * view: the page view and one leave, plus a show and a leave per time the
 * tab is shown again.
 *
 * Never throws into the page, never logs. No globals besides window.tally (and
 * window.fathom, only when not already defined).
 */
(function () {
  'use strict';
  var w = window, d = document, n = navigator, L = location, H = history;

  // Included twice? The first copy left window.tally._l.
  var pre = w.tally;
  if (pre && pre._l) return;

  var on = false;          // tracking enabled (config ok, no DNT, not file:)
  var ready = false;       // initial page view sent (false while prerendering)
  var pend = [];           // [type, props] sent before ready; replayed after it

  // Wrap a function so it never throws into the page.
  function safe(f) {
    return function () {
      try { return f.apply(this, arguments); } catch (e) { /* never throw */ }
    };
  }

  // addEventListener with a never-throwing handler.
  function on_(t, type, f, opt) { t.addEventListener(type, safe(f), opt); }

  // 12 random base36 chars (Math.random can give short strings: loop).
  function rnd() {
    for (var x = ''; x.length < 12;) x += Math.random().toString(36).slice(2);
    return x.slice(0, 12);
  }

  var site, api, tz = '', sid = '', path, href, ref = d.referrer, hashRouting = false;

  // ---- public API: always defined (no-ops when disabled) so page code that
  // calls tally.track never breaks.
  function go(e, p, u) {
    if (!on) return;
    if (ready) send(e, p, u); else pend.push([e, p]);
  }

  function track(name, o) {
    if (!name) return;
    o = o || {};
    var p = { name: '' + name }, v = o.value;
    if (v === +v && isFinite(v)) p.value = v;   // finite numbers only
    if (o.props) p.props = o.props;             // as given; the server validates
    if (o.revenue) p.revenue = o.revenue;       // {amount, currency}: exact on the server
    go('event', p);
  }

  // Fathom-style event: opts._value is in cents; Tally values are in units.
  function fev(name, o) {
    o = o || {};
    var c = o._value;
    track(name, { value: c == null ? o.value : c / 100, props: o.props });
  }

  w.tally = { _l: 1, track: safe(track), pageview: safe(function () { nav(1); }) };
  if (!w.fathom) {
    w.fathom = {
      trackEvent: safe(fev),
      track: safe(fev),
      trackGoal: safe(function (id, cents) { fev(id, { _value: cents }); }),
      trackPageview: w.tally.pageview
    };
  }

  try {
    var s = d.currentScript;
    var A = function (k) { return s.getAttribute('data-' + k); };
    site = A('site');
    // script.src is always absolute: "https://host:port/script.js" -> origin
    api = (A('api') || s.src.split('/').slice(0, 3).join('/')).replace(/\/+$/, '');
    on = site && L.protocol != 'file:' &&
      !(A('honor-dnt') == 'true' && (n.doNotTrack == '1' || n.globalPrivacyControl === true));
    hashRouting = A('hash') == 'true';
  } catch (e) { /* no usable <script> tag: stay off */ }
  if (!on) return;
  // The site owner's opt-out for their own browser.
  try { if (localStorage.tally_ignore == 'true') return; } catch (e) { /* no storage */ }

  try { tz = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { /* "" */ }

  // Session id: "<sid>.<lastActivityMs>" in sessionStorage; new after 30 min
  // idle. `sid` doubles as the in-memory copy when storage throws / is full.
  function session(now) {
    var v, m;
    try { v = sessionStorage.getItem('_tally_s'); } catch (e) { /* memory */ }
    m = /^(\w+)\.(\d+)$/.exec(v || sid);
    v = m && now - m[2] < 18e5 ? m[1] : rnd();
    sid = v + '.' + now;
    try { sessionStorage.setItem('_tally_s', sid); } catch (e) { /* memory */ }
    return v;
  }

  function send(e, p, u) {
    try {
      var now = Date.now(), url = api + '/collect', ok, x;
      var body = JSON.stringify({
        s: site, sid: session(now), e: e, p: p || {},
        u: u || L.href, r: ref, t: d.title,
        sw: screen.width, sh: screen.height, tz: tz,
        eid: rnd() + now.toString(36), ts: now,
        h: hashRouting ? 1 : undefined  // dropped by JSON.stringify when off
      });
      try { ok = n.sendBeacon(url, new Blob([body], { type: 'text/plain' })); } catch (e2) { /* XHR */ }
      if (!ok) {
        x = new XMLHttpRequest();
        x.open('POST', url);
        x.setRequestHeader('Content-Type', 'text/plain');
        x.send(body);
      }
    } catch (e3) { /* never throw */ }
  }

  // ---- engagement: active ms not yet reported, visible-since, max scroll %,
  // and whether this page view already sent its beacon.
  var act = 0, t0 = 0, max = 0, sent = 0, thr;
  var left;                         // a leave was sent and no show since
  var soft;                         // an SPA page view happened (no vitals)

  function tick() {                 // add the visible time since t0
    if (t0) { var x = Date.now(); act += x - t0; t0 = x; }
  }

  function scroll() {               // percent of the page seen so far
    var h = d.documentElement.scrollHeight, v = w.innerHeight;
    max = Math.max(max, h > v ? Math.min(100, Math.round((w.pageYOffset + v) / h * 100)) : 100);
  }

  // flush(hide): hide is truthy on a hide or unload (the pagehide event
  // itself when called as its listener): a "leave", once until the next show.
  // Otherwise (a route change) an "engagement" when there is news.
  function flush(hide) {
    tick(); scroll();
    if (hide ? !left : !sent || act >= 1e3) {
      sent = 1;
      left = left || hide;
      var p = { timeOnPage: Math.round(act / 1e3), scrollDepth: max }, g = w.tallyVitals, m, k;
      if (g && !soft) { m = g(); for (k in m) p[k] = m[k]; }   // Web Vitals, opt-in
      go(hide ? 'leave' : 'engagement', p, href);
      act = 0;
    }
  }

  // ---- page views. nav(force): a page view when path+search changed (SPA)
  // or when forced (manual tally.pageview()).
  function nav(force) {
    var p = L.pathname + L.search + (hashRouting ? L.hash : '');
    if (!ready || (p == path && !force)) return;
    flush();                        // previous page's engagement first
    soft = 1;                       // vitals belong to the first page view
    ref = href;                     // SPA referrer = previous page view
    view();
  }

  function view() {
    path = L.pathname + L.search + (hashRouting ? L.hash : '');
    href = L.href;
    act = max = sent = 0;
    scroll();
    send('pageview', {});
  }

  function start() {
    if (ready) return;
    ready = true;
    t0 = d.hidden ? 0 : Date.now();
    view();                         // sent even when loaded in a background tab

    // SPA route changes. The original's exceptions propagate unchanged.
    var wrap = function (m) {
      var o = H[m];
      if (o) H[m] = function () {
        var r = o.apply(this, arguments);
        try { nav(); } catch (e) { /* never throw */ }
        return r;
      };
    };
    wrap('pushState');
    wrap('replaceState');
    on_(w, 'popstate', function () { nav(); });
    if (hashRouting) on_(w, 'hashchange', function () { nav(); });

    on_(d, 'visibilitychange', function () {
      if (d.hidden) { flush(1); t0 = 0; }
      else {
        t0 = t0 || Date.now();      // keep a running interval
        if (left) { left = 0; go('show', {}, href); }   // one per show, no timer
      }
    });
    on_(w, 'pagehide', flush);
    on_(w, 'scroll', function () {      // throttled
      thr = thr || setTimeout(safe(function () { thr = 0; scroll(); }), 250);
    }, { passive: true });

    // Outbound and download clicks (capture phase, sendBeacon survives unload).
    on_(d, 'click', function (ev) {
      for (var a = ev.target; a && !/^a$/i.test(a.nodeName); a = a.parentNode);
      if (a && /^https?:$/.test(a.protocol)) {
        var k = a.hasAttribute('download') ||
          /\.(pdf|zip|dmg|exe|csv|xlsx?|docx?|pptx?|mp[34]|gz|rar|7z|apk|msi|deb|rpm|iso)$/i.test(a.pathname)
          ? 'download' : a.hostname != L.hostname ? 'outbound' : 0;
        if (k) go('click', { url: a.href, kind: k });
      }
    }, true);

    // Calls made before the script loaded (window.tally.q) or while prerendering.
    var q = pre && pre.q, i;
    if (q && q.push) for (i = 0; i < q.length; i++) if (q[i]) w.tally.track(q[i][0], q[i][1]);
    for (i = 0; i < pend.length; i++) send(pend[i][0], pend[i][1]);
    pend = [];
  }

  // Prerendered page: nothing is sent until the user actually navigates to it.
  if (d.prerendering) on_(d, 'prerenderingchange', start);
  else start();
})();
