/*
 * Tally affiliate module — readable, commented copy. DOCUMENTATION ONLY: it
 * is not served. `affiliate.js` next to it is the file served verbatim at
 * GET /affiliate.js; it is this same program hand-compacted. Change both
 * together; the behaviour must stay identical.
 *
 * Opt-in, on the pages an affiliate link can land on and on the checkout:
 *   <script src="https://ingest.example/affiliate.js" data-param="ref,via" data-days="30"></script>
 * Options (attributes of that tag):
 *   data-param      comma list of link parameters (default "ref,via")
 *   data-days       the attribution window in days, a whole number 1..90
 *                   (default 30; anything else is 30)
 *   data-storage    "session": sessionStorage (the tab's life, and at most
 *                   the window) instead of localStorage
 *   data-honor-dnt  "true": as the tracker's, store nothing (and read
 *                   nothing) when navigator.doNotTrack === "1" or
 *                   navigator.globalPrivacyControl === true
 *
 * On load: the first parameter of data-param (in its order) whose value in
 * the page's query string is a valid affiliate slug (trimmed and folded to
 * lower case, 1 to 64 of a-z 0-9 - _: core's conversion::check_slug) is
 * stored, and only it: one first-party key, "tally_aff", holding
 *   {"slug":"alice","expires":<ms since 1970>}
 * (expires = now + data-days). The last click wins: a later landing with a
 * valid slug replaces the entry and restarts the window; a landing without
 * one, or with an invalid value ("<script>", 200 characters), leaves the
 * entry as it is and stores nothing. No id, no URL, no referrer, no time of
 * the visit is stored.
 *
 * window.tallyAffiliate() returns the slug while the entry is within its
 * window (now < expires <= now + data-days: shortening data-days shortens
 * entries already stored), else null, and then removes the entry (expired,
 * or not one this module wrote).
 *
 * It sends nothing, ever: the slug reaches Tally only when the site's own
 * server posts a conversion naming it (POST /api/sites/{site}/conversions
 * with "affiliate"). Opt-out, as the tracker's: localStorage.tally_ignore =
 * "true" (or data-honor-dnt with DNT/GPC): nothing is stored,
 * tallyAffiliate() returns null and removes an entry kept from before.
 * Storage the browser refuses counts as opted out. Never throws into the
 * page. No globals besides window.tallyAffiliate (also the marker that stops
 * a second copy).
 */
(function () {
  'use strict';
  var w = window, n = navigator, KEY = 'tally_aff',
    SLUG = /^[a-z0-9_-]{1,64}$/,      // core's check_slug, after trim + lower case
    s = document.currentScript,
    A = function (k) { return s && s.getAttribute('data-' + k); },
    days = +A('days'),
    params = (A('param') || 'ref,via').split(','),
    store, off, i, v, now = Date.now;
  if (w.tallyAffiliate) return;      // included twice
  // The window in ms: a whole number of days 1..90, else 30.
  days = (days > 0 && days < 91 && days % 1 == 0 ? days : 30) * 864e5;
  try {
    store = A('storage') == 'session' ? sessionStorage : localStorage;
    off = localStorage.tally_ignore == 'true' ||
      (A('honor-dnt') == 'true' && (n.doNotTrack == '1' || n.globalPrivacyControl === true));
  } catch (x) { off = 1; }           // no storage: nothing to do

  w.tallyAffiliate = function () {
    try {
      var e = JSON.parse(store.getItem(KEY)), left = e.expires - now();
      if (!off && typeof (v = e.slug) == 'string' && SLUG.test(v) &&
          left > 0 && left <= days) return v;
    } catch (x) { /* no entry, no storage, or not JSON */ }
    try { store.removeItem(KEY); } catch (x) { /* no storage */ }
    return null;                     // and the entry (expired, foreign, opted out) is gone
  };

  if (!off) try {
    for (i = 0; i < params.length; i++)
      if (SLUG.test(v = (new URLSearchParams(location.search).get(params[i].trim()) || '')
          .trim().toLowerCase())) {    // the first valid one; last click wins
        store.setItem(KEY, JSON.stringify({ slug: v, expires: now() + days }));
        break;
      }
  } catch (x) { /* storage full or refused: nothing stored */ }
})();
