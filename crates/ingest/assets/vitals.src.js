/*
 * Tally Web Vitals module — readable, commented copy. DOCUMENTATION ONLY: it
 * is not served. `vitals.js` next to it is the file served verbatim at
 * GET /vitals.js; it is this same program hand-compacted. Change both
 * together; the behaviour must stay identical.
 *
 * Opt-in, next to the tracker (either order; early in <head> is best):
 *   <script src="https://ingest.example/vitals.js"></script>
 *   <script defer data-site="SITE_ID" src="https://ingest.example/script.js"></script>
 *
 * It sends nothing itself. It defines window.tallyVitals(), which returns the
 * page's Web Vitals so far, and the tracker (script.js) adds them to the
 * leave / engagement beacon of the document's first page view (the hard
 * navigation the metrics belong to): no extra request, no extra write.
 *
 *   { lcp, inp, fcp, ttfb: ms (integers), cls: the layout shift score }
 *   (a metric the browser has not measured is absent)
 *
 * Definitions follow Google's MIT-licensed `web-vitals` library:
 *   TTFB  navigation entry responseStart - activationStart, floored at 0.
 *   FCP   the `paint` entry first-contentful-paint, minus activationStart,
 *         if it came before the page was first hidden.
 *   LCP   the latest `largest-contentful-paint` entry before the page was
 *         first hidden, minus activationStart; no more entries are taken
 *         after the first keydown or click (the browser itself stops
 *         emitting them after an input or a scroll).
 *   CLS   the largest session window of `layout-shift` entries without
 *         recent input: shifts less than 1 s apart, a window at most 5 s
 *         long. Reported once the page had its first contentful paint.
 *   INP   the worst interaction latency (the longest `event` entry duration
 *         per interactionId, entries from durationThreshold 40 and
 *         `first-input`), ignoring one per 50 interactions (the p98
 *         approximation: the 10 longest are kept). Interactions are counted
 *         by performance.interactionCount, or estimated from the ids of all
 *         `event` entries (they step by 7) where it is missing.
 * Each read first takes the observers' pending records, so the values read
 * on a hide are final. Not handled: bfcache restores (a restored page keeps
 * its first load's values).
 *
 * Never throws into the page. No globals besides window.tallyVitals.
 */
(function () {
  'use strict';
  var w = window, d = document, p = w.performance, PO = w.PerformanceObserver;
  if (w.tallyVitals || !PO || !p) return;

  var v = {};                   // lcp, fcp, ttfb (ms), cls, inp
  var obs = [];                 // [observer, entry handler]
  var act = 0;                  // activationStart (prerendered pages)
  var hid = d.visibilityState == 'hidden' ? 0 : 1 / 0;   // first hidden at
  var lcpOn = 1;                // LCP entries still taken
  var cls = 0, win = 0, first, last, shifts;              // CLS session window
  var worst = [], byId = {};   // INP: the 10 longest interactions
  var minId = 1 / 0, maxId = 0, cnt = 0;                  // interaction count estimate

  function observe(type, f, opt) {
    try {
      var o = new PO(function (l) { l.getEntries().forEach(f); });
      opt = opt || {};
      opt.type = type;
      opt.buffered = true;
      o.observe(opt);
      obs.push([o, f]);
      return 1;
    } catch (e) { /* unsupported entry type */ }
  }

  function after(t) { return Math.max(t - act, 0); }

  try {
    var nav = p.getEntriesByType('navigation')[0];
    if (nav) {
      act = nav.activationStart || 0;
      if (nav.responseStart > 0) v.ttfb = after(nav.responseStart);
    }
  } catch (e) { /* no navigation timing */ }

  function hide(e) {
    if (d.visibilityState == 'hidden') hid = Math.min(hid, e.timeStamp);
  }
  d.addEventListener('visibilitychange', hide, true);
  w.addEventListener('pagehide', hide, true);

  observe('paint', function (e) {
    if (e.name == 'first-contentful-paint' && e.startTime < hid) v.fcp = after(e.startTime);
  });

  observe('largest-contentful-paint', function (e) {
    if (lcpOn && e.startTime < hid) v.lcp = after(e.startTime);
  });
  function stopLcp() {
    if (lcpOn) { take(); lcpOn = 0; }
  }
  ['keydown', 'click'].forEach(function (t) { d.addEventListener(t, stopLcp, true); });

  var clsOn = observe('layout-shift', function (e) {
    if (e.hadRecentInput) return;
    if (shifts && e.startTime - last < 1e3 && e.startTime - first < 5e3) win += e.value;
    else { win = e.value; first = e.startTime; shifts = 1; }
    last = e.startTime;
    if (win > cls) cls = win;
  });

  function interaction(e) {
    var id = e.interactionId;
    if (!id) return;
    var it = byId[id], min = worst[worst.length - 1];
    if (it) it.l = Math.max(it.l, e.duration);
    else if (worst.length < 10 || e.duration > min.l) {
      it = byId[id] = { id: id, l: e.duration };
      worst.push(it);
    } else return;
    worst.sort(function (a, b) { return b.l - a.l; });
    while (worst.length > 10) delete byId[worst.pop().id];
  }
  observe('event', interaction, { durationThreshold: 40 });
  observe('first-input', interaction);
  if (!('interactionCount' in p)) {
    observe('event', function (e) {
      if (e.interactionId) {
        minId = Math.min(minId, e.interactionId);
        maxId = Math.max(maxId, e.interactionId);
        cnt = (maxId - minId) / 7 + 1;
      }
    }, { durationThreshold: 0 });
  }

  // Hands pending entries to their handlers (a hide's final values).
  function take() {
    for (var i = 0; i < obs.length; i++) {
      try { obs[i][0].takeRecords().forEach(obs[i][1]); } catch (e) { /* none */ }
    }
  }

  w.tallyVitals = function () {
    var out = {}, k, n;
    try {
      take();
      for (k in v) out[k] = Math.round(v[k]);
      if (clsOn && 'fcp' in v) out.cls = Math.round(cls * 1e4) / 1e4;
      if (worst.length) {
        n = 'interactionCount' in p ? p.interactionCount : cnt;
        out.inp = Math.round(worst[Math.min(worst.length - 1, Math.floor(n / 50))].l);
      }
    } catch (e) { /* what is known so far */ }
    return out;
  };
})();
