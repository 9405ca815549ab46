/*
 * Tally form-submissions module — readable, commented copy. DOCUMENTATION
 * ONLY: it is not served. `forms.js` next to it is the file served verbatim
 * at GET /forms.js; it is this same program hand-compacted. Change both
 * together; the behaviour must stay identical.
 *
 * Opt-in, next to the tracker (either order):
 *   <script src="https://ingest.example/forms.js"></script>
 *   <script defer data-site="SITE_ID" src="https://ingest.example/script.js"></script>
 *
 * What it does, as Plausible's form-submissions option does: one listener
 * for `submit` on the document, in the capture phase (so it runs before the
 * page's own handlers: a form whose handler calls preventDefault, an SPA
 * form sent with fetch, still counts; forms added to the page later count
 * too). Each submit event of a form that is valid (checkValidity()), or
 * that skips validation (its `novalidate` attribute, or, unlike Plausible,
 * a submit button with `formnovalidate`), is one custom event:
 *
 *   tally.track('Form: Submission', {props: {path: location.pathname}})
 *
 * The browser fires no submit event for an invalid form it blocks (a
 * `required` field left empty), so that sends nothing; neither does
 * form.submit() from script (the browser fires no event; Plausible has the
 * same limit). Every submit event counts, as in Plausible: two submissions
 * are two events. Nothing of the form is read besides its validity: no
 * field name or value, no action URL, no id; the path is location.pathname
 * (no query string, no fragment).
 *
 * It sends through the tracker's own tally.track, so every opt-out of the
 * tracker applies (no data-site, data-honor-dnt, file: pages,
 * localStorage.tally_ignore, prerendering until shown). Before the tracker
 * has run, the call waits in the tracker's documented queue
 * (window.tally.q), which the tracker replays when it starts.
 *
 * Never throws into the page. No globals besides window.tallyForms (the
 * marker that stops a second copy) and the queue above.
 */
(function () {
  'use strict';
  var w = window;
  if (w.tallyForms) return;         // included twice
  w.tallyForms = 1;

  document.addEventListener('submit', function (e) {
    try {
      var f = e.target, b = e.submitter, t = w.tally,
        o = { props: { path: location.pathname } };
      if (!(f.hasAttribute('novalidate') || (b && b.formNoValidate) || f.checkValidity())) return;
      if (t && t.track) t.track('Form: Submission', o);
      else {                        // the tracker has not run yet: its queue
        t = w.tally = t || {};
        (t.q = t.q || []).push(['Form: Submission', o]);
      }
    } catch (x) { /* never throw */ }
  }, true);
})();
