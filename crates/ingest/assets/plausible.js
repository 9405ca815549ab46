/* Tally tracker, Plausible-compatible mode (served at /js/script.js and
   /js/script.<extensions>.js). Tally's own code, written to Plausible's
   documented script interface, so a tag such as
     <script defer data-domain="example.com" src="https://TALLY/js/script.outbound-links.js"></script>
   and plausible('Signup', {props: {plan: 'pro'}, revenue: {amount: 49, currency: 'EUR'}})
   work unchanged. Events go to POST {data-api or the script's origin}/api/event
   as text/plain JSON (no CORS preflight), with fetch keepalive.
   Extensions (from the file name): hash, outbound-links, file-downloads,
   tagged-events, pageview-props, revenue (always on), manual.
   Opt-out: localStorage.plausible_ignore = "true". No cookies, no storage. */
(function () {
  'use strict';
  var w = window, d = document, L = location, s = d.currentScript;
  if (!s) return;
  var src = s.getAttribute('src') || '';
  var file = src.split('?')[0].split('/').pop() || '';
  var ext = file.replace(/^script\.?|\.?js$/g, '').split('.');
  var has = function (x) { return ext.indexOf(x) >= 0; };
  var api = s.getAttribute('data-api') || new URL(src, L.href).origin + '/api/event';
  var domain = s.getAttribute('data-domain') || L.hostname;
  var hash = has('hash');
  var pvProps = {};
  if (has('pageview-props')) {
    for (var i = 0; i < s.attributes.length; i++) {
      var a = s.attributes[i];
      if (a.name.indexOf('event-') === 0) pvProps[a.name.slice(6)] = a.value;
    }
  }
  function ignored() {
    try { return w.localStorage.plausible_ignore === 'true'; } catch (e) { return false; }
  }
  function send(body, cb) {
    if (ignored()) { if (cb) cb({ status: 0 }); return; }
    try {
      fetch(api, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, keepalive: true, body: JSON.stringify(body) })
        .then(function (r) { if (cb) cb({ status: r.status }); }, function () { if (cb) cb({ status: 0 }); });
    } catch (e) { if (cb) cb({ status: 0 }); }
  }

  // Engagement: time visible and focused, and the deepest scroll, per page view.
  var page = null, active = 0, since = null, maxScroll = 0, sentScroll = -1;
  function scrollPct() {
    var h = Math.max(d.body ? d.body.scrollHeight : 0, d.documentElement.scrollHeight);
    var seen = (w.innerHeight || 0) + (w.scrollY || 0);
    return h <= 0 ? 0 : Math.min(100, Math.round(seen / h * 100));
  }
  function running() { return d.visibilityState === 'visible' && d.hasFocus(); }
  function tick() {
    if (since !== null) { active += Date.now() - since; since = null; }
    if (running()) since = Date.now();
  }
  function engagement() {
    if (!page) return;
    tick();
    maxScroll = Math.max(maxScroll, scrollPct());
    if (maxScroll > sentScroll || active >= 3000) {
      var b = { n: 'engagement', u: page.u, d: domain, sd: maxScroll, e: active };
      if (page.p) b.p = page.p;
      if (hash) b.h = 1;
      send(b);
      sentScroll = maxScroll; active = 0;
    }
  }

  function trigger(name, opts) {
    opts = opts || {};
    var b = { n: name, v: 1, u: opts.u || L.href, d: domain, r: d.referrer || null };
    var props = opts.props || (name === 'pageview' ? pvProps : null);
    if (props && Object.keys(props).length) b.p = props;
    if (opts.revenue) b.$ = opts.revenue;
    if (opts.interactive === false) b.i = false;
    if (hash) b.h = 1;
    if (name === 'pageview') {
      engagement();
      page = { u: b.u, p: b.p };
      active = 0; sentScroll = -1; maxScroll = scrollPct(); since = null; tick();
    }
    send(b, opts.callback);
  }

  var last = null;
  function pageview(force) {
    var path = L.pathname + (hash ? L.hash : '');
    if (!force && path === last) return;
    last = path;
    trigger('pageview');
  }

  // Clicks: outbound links, downloads, tagged elements.
  var DOWNLOADS = 'pdf xlsx docx txt rtf csv exe key pps ppt pptx 7z pkg rar gz zip avi mov mp4 mpeg wmv midi mp3 wav wma dmg'.split(' ');
  function link(el) {
    while (el && !(el.tagName === 'A' && el.href)) el = el.parentNode;
    return el;
  }
  function tagged(el) {
    for (; el && el.getAttribute; el = el.parentNode) {
      var c = (el.getAttribute('class') || '').split(/\s+/), name = null, p = {};
      for (var i = 0; i < c.length; i++) {
        var m = /^plausible-event-(.+)=(.+)$/.exec(c[i]);
        if (!m) continue;
        if (m[1] === 'name') name = m[2].replace(/\+/g, ' ');
        else p[m[1]] = m[2].replace(/\+/g, ' ');
      }
      if (name) return { name: name, props: p };
    }
    return null;
  }
  d.addEventListener('click', function (ev) {
    if (ev.type === 'auxclick' && ev.button !== 1) return;
    var t = has('tagged-events') && tagged(ev.target);
    if (t) { trigger(t.name, { props: t.props }); return; }
    var a = link(ev.target);
    if (!a) return;
    var url;
    try { url = new URL(a.href, L.href); } catch (e) { return; }
    var extn = url.pathname.split('.').pop().toLowerCase();
    if (has('file-downloads') && url.pathname.indexOf('.') > 0 && DOWNLOADS.indexOf(extn) >= 0) {
      trigger('File Download', { props: { url: url.origin + url.pathname } });
    } else if (has('outbound-links') && url.host && url.host !== L.host && /^https?:$/.test(url.protocol)) {
      trigger('Outbound Link: Click', { props: { url: a.href } });
    }
  }, true);

  d.addEventListener('visibilitychange', function () { if (d.visibilityState === 'hidden') engagement(); else tick(); });
  w.addEventListener('pagehide', engagement);
  w.addEventListener('focus', tick);
  w.addEventListener('blur', function () { engagement(); });
  w.addEventListener('scroll', function () { maxScroll = Math.max(maxScroll, scrollPct()); }, { passive: true });

  // The queue of calls made before the script loaded, then the real function.
  var queue = (w.plausible && w.plausible.q) || [];
  w.plausible = trigger;
  for (var q = 0; q < queue.length; q++) trigger.apply(null, queue[q]);

  if (!has('manual')) {
    var push = history.pushState;
    if (push) {
      history.pushState = function () { push.apply(this, arguments); pageview(); };
      w.addEventListener('popstate', function () { pageview(); });
    }
    if (hash) w.addEventListener('hashchange', function () { pageview(); });
    w.addEventListener('pageshow', function (e) { if (e.persisted) pageview(true); });
    if (d.visibilityState === 'prerender') {
      d.addEventListener('visibilitychange', function once() {
        if (d.visibilityState === 'visible') { d.removeEventListener('visibilitychange', once); pageview(); }
      });
    } else pageview();
  }
})();
