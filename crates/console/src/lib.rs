//! `tally-console`: the console's HTTP door, `/api/console/…` (issue 21).
//! This file only routes: a method and a path to a handler.
//!
//! Routes, JSON in and out:
//! - `GET setup`, `POST setup {token, email, password}`: the first owner
//!   ([`login`]);
//! - `POST login {email, password}`, `POST login/totp {challenge, code}`,
//!   `POST logout` ([`login`]); a user holds at most 20 sessions, a new
//!   one ends the least recently used ([`tally_core::account::caps`]);
//! - `GET me`, `GET sessions`, `DELETE sessions/{id}`,
//!   `POST totp/setup|enable|disable`, `PUT settings` ([`account`]);
//! - passwords ([`password`]): `POST users/{uid}/reset` (instance owner
//!   only) → 201 `{link, token: "tr_…", mailed, expires}`, a link
//!   `{origin}/console#reset=tr_…` good once for 24 h;
//!   `POST password/forgot {email}` → 202 `{ok: true, mail}` whatever the
//!   email (`mail`: whether the instance sends mail at all), in no less
//!   than 400 ms either way, a link good once for 1 h mailed when a user
//!   has it; `POST password/reset {token,
//!   password}` → `{ok: true}` (410 `reset_invalid`: used, replaced or
//!   expired; 400 `weak_password`), every session of the user ended, no
//!   one signed in; `POST password/change {current, new}` (signed in) →
//!   `{ok: true, sessions_ended}` (401 `invalid_credentials`), the user's
//!   other sessions ended;
//! - sites and everything the CLI configures, with roles, invitations and
//!   an audit log ([`sites`], [`goals`], [`saved`], [`recipients`], [`alerts`], [`credentials`], [`members`],
//!   [`audit`]; bodies in [`site_body`]; who may do what decided once, in
//!   [`permit`]): listed below.
//!
//! Every route but setup, login, `password/forgot` and `password/reset`
//! needs the `tally_session` cookie
//! ([`auth`]); a state-changing one also `x-csrf-token` and, when it
//! sends `Origin`, the same host (403 `csrf`). When the instance requires
//! 2FA, a user without it may only read `me`, set 2FA up and sign out
//! (403 `totp_required`). Passwords and codes are guess-limited
//! ([`guard`]). [`handle`] is a plain async function over the
//! [`ConsoleStore`] port and a clock; `main.rs` wires it to `lambda_http`;
//! [`error`] is the one place errors become responses.
//!
//! # Site routes
//!
//! Errors are `{"error": {"code", "message"}}`: 401 `not_signed_in` (no
//! session) or `invalid_api_key`; 403 `forbidden` (the role or key scope
//! does not allow it, a key of another site, not a member), `csrf`,
//! `totp_required`; 404 `site_not_found` (after the role check), 400 with
//! a code per field (`invalid_domain`, `invalid_timezone`, …), 409
//! `site_exists`, `goal_exists`, `funnel_exists`, `last_owner`,
//! `email_taken`; 410 `invite_invalid`. A role is `"viewer"`, `"admin"`
//! or `"owner"`; times are Unix milliseconds. The role each needs:
//! read (R: viewer), configure (C: admin, or a `configure` API key as
//! `Authorization: Bearer tk_…`), owner (O). Keys never manage keys,
//! members or invites.
//!
//! | route | role | request | response |
//! | --- | --- | --- | --- |
//! | `GET sites` | signed in | — | `{sites: [Site], deleting: [Deletion]}` (`deleting`: those the caller deleted, all to the instance owner; as `DELETE sites/{site}` answers) |
//! | `POST sites` | instance owner | `{domains: [..], timezone?: "UTC", id?, retention_days?, history_days?, exclude_networks?, exclude_paths?}` | 201 `Site` (the creator is its owner; 409 `site_exists`, or `site_deleting` while a deleted site of that id is swept) |
//! | `GET sites/{site}` | R | — | `Site` = `{id, domains, timezone, retention_days, history_days, exclude_networks, exclude_paths, created_at, role}` |
//! | `PATCH sites/{site}` | C | any of `{domains, timezone, exclude_networks, exclude_paths, retention_days, history_days}` (a list replaces; `[]` clears) | `Site` |
//! | `DELETE sites/{site}` | O | — | 202 `{id, requested_at, sweep_after, stage: "waiting"\|"sweeping"\|"finishing", percent, removed}` (keys, links, members and invites at once; every other item by the job, [`tally_core::product::deletion`]) |
//! | `GET sites/{site}/snippet` | R | — | `{snippet, ingest_url}` |
//! | `GET sites/{site}/first-pageview` | R | — | `{seen: bool, hours: 3}` |
//! | `GET sites/{site}/goals` | R | — | `{goals: [Goal]}`, `Goal` = `{id, name, rule: {type: "page", pattern, matching: "exact"\|"wildcard"\|"regex"} \| {type: "scroll", pattern, matching, depth} \| {type: "event", name} \| {type: "event_props", name, props: {key: value}}, created_at}` |
//! | `POST sites/{site}/goals` | C | `{event?, props?, page?, matching?, scroll_depth?, name?}` (one of event, page; `props` 1-3 `{key: value}` with event, `scroll_depth` 1-100 with page; else 400 `invalid_goal`, `invalid_goal_props`, `invalid_scroll_depth`) | 201 `Goal` |
//! | `DELETE sites/{site}/goals/{id}` | C | — | `{ok: true}` |
//! | `GET sites/{site}/funnels` | R | — | `{funnels: [Funnel]}`, `Funnel` = `{id, name, steps: [{type: "page", pattern} \| {type: "event", name}, prop?: [k, v]], mode, created_at}` |
//! | `POST sites/{site}/funnels` | C | `{name, steps: ["/pricing", "event:Signup plan=pro"], strict?: false}` | 201 `Funnel` |
//! | `DELETE sites/{site}/funnels/{id}` | C | — | `{ok: true}` |
//! | `GET sites/{site}/affiliates` | R | — | `{affiliates: [Affiliate]}`, `Affiliate` = `{slug, commission: {kind: "rate", rate: "0.1"} \| {kind: "fixed", amount: "5"}, currency, created_at}` |
//! | `POST sites/{site}/affiliates` | C | `{slug, rate? \| fixed?, currency}` (core's `AffiliateSpec`, as `tally affiliate add`; else 400 `invalid_affiliate`, `invalid_commission`, `invalid_currency`, `too_many_decimals`) | 201 `Affiliate` (409 `affiliate_exists`; `too_many_affiliates` past 500) |
//! | `DELETE sites/{site}/affiliates/{slug}` | C | — | `{ok: true}` (its conversions keep their commission) |
//! | `GET sites/{site}/shares` | C | — | `{shares: [Share]}`, `Share` = `{id, prefix, label, filter, created_at, expires_at, password: bool, revoked_at}` |
//! | `POST sites/{site}/shares` | C | `{label?, filter?, segment?, expires?: "30d"\|"2027-01-31", password?}` (`segment`: a site-wide saved segment's id, the link locked to it) | 201 `{link, token, share: Share}` (shown once; 409 `too_many_links` past 100 live) |
//! | `DELETE sites/{site}/shares/{id}` | C | — | `{ok: true}` (revoked) |
//! | `GET sites/{site}/segments` | R | — | `{segments: [Segment]}` (site-wide and the caller's personal ones; `?everyone=true`: every member's, owners only, else 403), `Segment` = `{id, name, filter, owner?, created_by, created_at}` |
//! | `POST sites/{site}/segments` | C; `personal: true`: R, people | `{name, filter, personal?: false}` | 201 `Segment` (409 `too_many_segments` past 100 site-wide, `too_many_personal_segments` past 20 of the caller's own) |
//! | `DELETE sites/{site}/segments/{id}` | C; own personal: R | — | `{ok: true}` (409 `segment_in_use` while a live link is locked to it) |
//! | `GET sites/{site}/annotations` | R | — | `{annotations: [Annotation]}` (`?everyone=true` as for segments), `Annotation` = `{id, date, text, owner?, created_by, created_at}` |
//! | `POST sites/{site}/annotations` | C; `personal: true`: R, people | `{date: "2026-03-01", text (≤ 500 characters), personal?: false}` | 201 `Annotation` (409 `too_many_annotations` past 1,000 site-wide, `too_many_personal_annotations` past 200 of the caller's own) |
//! | `DELETE sites/{site}/annotations/{id}` | C; own personal: R | — | `{ok: true}` |
//! | `GET sites/{site}/email-reports` | C | — | `{recipients: [Recipient]}`, `Recipient` = `{id, email, weekly, monthly, created_at}` (`id`: the address hash) |
//! | `POST sites/{site}/email-reports` | C | `{email, weekly?: false, monthly?: false}` (one at least; an address already listed gets the reports given now: 200) | 201 `Recipient` (409 `too_many_recipients` past 50) |
//! | `DELETE sites/{site}/email-reports/{id}` | C | — | `{ok: true}` |
//! | `GET sites/{site}/alerts` | C | — | `Alerts` = `{enabled, watch: "spike"\|"drop"\|"both", min_volume, spike_pct, spread_pct, drop_pct, cooldown_hours, emails, slack_url, webhook_url, webhook_secret, updated_at}` (URLs as scheme and host only; `updated_at` null: never saved, the defaults) |
//! | `PUT sites/{site}/alerts` | C | any of `{enabled, watch, min_volume, spike_pct, spread_pct, drop_pct, cooldown_hours, emails: [..], slack_url, webhook_url, rotate_secret}` (`""` removes a URL; core's `AlertSpec::apply`, as `tally alert set`; else 400 `invalid_spike_pct`, `invalid_url`, `no_channel`, …) | `Alerts` (a signing secret made when a webhook URL is first set or `rotate_secret`) |
//! | `GET sites/{site}/alerts/log?hours=168` | C | — | `{hours, alerts: [{kind, hour, observed, baseline, threshold, recorded_at}], deliveries: [{channel, hour, delivered, next_at, attempts: [{channel, hour, attempt, at, status, ok, next_at}]}]}` (newest first, at most 100 each, `hours` 1-720) |
//! | `GET sites/{site}/proxy` | C | — | `Proxy` = `{enabled, header: "tally-proxy-secret", networks, previous_valid_until}` |
//! | `POST sites/{site}/proxy` | C | any of `{rotate, networks: [..], remove}` (`networks`: CIDR or `"cloudflare"`; core's `ProxyChange::apply`, as `tally site proxy`; else 400 `invalid_network`, `too_many_networks`) | `Proxy` with `secret` (shown once) when one was made |
//! | `GET sites/{site}/keys` | C, people | — | `{keys: [Key]}`, `Key` = `{id, prefix, label, scope: "read"\|"configure", owner, maker?, created_at, revoked_at}` (`maker`: the maker's email while a member) |
//! | `POST sites/{site}/keys` | C, people | `{label?, scope?: "read"}` | 201 `{key, item: Key}` (shown once; 409 `too_many_keys` past 50 live) |
//! | `DELETE sites/{site}/keys/{id}` | C, people (an admin: own keys) | — | `{ok: true}` (revoked) |
//! | `GET sites/{site}/members` | O | — | `{members: [{uid, email, role}]}` |
//! | `GET sites/{site}/members/{uid}` | O | — | `{uid, email, role}` |
//! | `PATCH sites/{site}/members/{uid}` | O | `{role}` | `{uid, email, role}` (not the last owner) |
//! | `DELETE sites/{site}/members/{uid}` | O | — | `{ok: true}` (not the last owner; their personal segments and annotations go too) |
//! | `GET sites/{site}/invites` | O | — | `{invites: [Invite]}`, `Invite` = `{id, role, email, created, expires, by}` |
//! | `POST sites/{site}/invites` | O, people | `{role, email?}` | 201 `{link, token: "ti_…", mailed: bool, invite: Invite}` |
//! | `DELETE sites/{site}/invites/{id}` | O | — | `{ok: true}` |
//! | `POST invites/accept` | anyone with the token | `{token, email?, password?}` | `me` (a new user: with the session cookie) |
//! | `GET sites/{site}/audit?limit=50&before=` | O | — | `{entries: [{at, nonce, actor, actor_email, action, target, detail}], next}` |
//!
//! `GET /console` serves the console page ([`page`]): the browser side of
//! these routes, hash-routed, under a strict CSP.

pub mod account;
pub mod affiliates;
pub mod alerts;
pub mod audit;
pub mod auth;
pub mod body;
pub mod collection;
pub mod config;
pub mod credentials;
pub mod error;
pub mod goals;
pub mod guard;
pub mod login;
pub mod mail;
pub mod members;
pub mod page;
pub mod password;
pub mod permit;
pub mod proxy;
pub mod recipients;
pub mod reports;
pub mod saved;
pub mod site_body;
pub mod site_store;
pub mod sites;
pub mod store;

pub use crate::config::Config;
pub use crate::site_store::SiteStore;
pub use crate::store::ConsoleStore;

use crate::collection::{CollectionStore, Op};
use crate::error::{ConsoleError, error_response};
use lambda_http::http::header::HeaderValue;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_store::clock::Clock;

/// The path every console route is under.
pub const PREFIX: &str = "/api/console/";

/// A console route, by method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route<'a> {
    SetupNeeded,
    Setup,
    Login,
    LoginTotp,
    Logout,
    Me,
    Sessions,
    RevokeSession(&'a str),
    TotpSetup,
    TotpEnable,
    TotpDisable,
    PutSettings,
    PasswordForgot,
    PasswordReset,
    PasswordChange,
    ResetUser(&'a str),
}

impl Route<'_> {
    /// Whether a user who must turn on 2FA may still use it.
    fn open_before_totp(&self) -> bool {
        matches!(
            self,
            Self::Logout | Self::Me | Self::TotpSetup | Self::TotpEnable
        )
    }
}

/// What a site route works on: a collection under `sites/{site}/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Collection {
    Goals,
    Funnels,
    Shares,
    Keys,
    Members,
    Invites,
    Segments,
    Annotations,
    EmailReports,
    Affiliates,
}

/// Each collection by the word that names it in `sites/{site}/{word}`.
const COLLECTIONS: [(&str, Collection); 10] = [
    ("goals", Collection::Goals),
    ("funnels", Collection::Funnels),
    ("shares", Collection::Shares),
    ("keys", Collection::Keys),
    ("members", Collection::Members),
    ("invites", Collection::Invites),
    ("segments", Collection::Segments),
    ("annotations", Collection::Annotations),
    ("email-reports", Collection::EmailReports),
    ("affiliates", Collection::Affiliates),
];

/// A site route (`sites…`, `invites/accept`), by method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SiteRoute<'a> {
    List,
    Create,
    Get(&'a str),
    Update(&'a str),
    Delete(&'a str),
    Snippet(&'a str),
    FirstPageview(&'a str),
    Audit(&'a str),
    Alerts(&'a str),
    SetAlerts(&'a str),
    AlertLog(&'a str),
    Proxy(&'a str),
    SetProxy(&'a str),
    Items(&'a str, Collection),
    AddItem(&'a str, Collection),
    Item(&'a str, Collection, &'a str),
    ChangeItem(&'a str, Collection, &'a str),
    RemoveItem(&'a str, Collection, &'a str),
    AcceptInvite,
}

fn method_not_allowed(allowed: &str) -> ConsoleError {
    ConsoleError::new(405, "method_not_allowed", format!("use {allowed}"))
}

/// The site route of a method and path, if the path is one.
fn site_route<'a>(
    method: &str,
    segments: &[&'a str],
) -> Option<Result<SiteRoute<'a>, ConsoleError>> {
    let collection = |name: &str| {
        COLLECTIONS
            .iter()
            .find(|(word, _)| *word == name)
            .map(|(_, c)| *c)
    };
    let route = match (segments, method) {
        (["invites", "accept"], "POST") => SiteRoute::AcceptInvite,
        (["invites", "accept"], _) => return Some(Err(method_not_allowed("POST"))),
        (["sites"], "GET") => SiteRoute::List,
        (["sites"], "POST") => SiteRoute::Create,
        (["sites"], _) => return Some(Err(method_not_allowed("GET or POST"))),
        (["sites", site], "GET") => SiteRoute::Get(site),
        (["sites", site], "PATCH") => SiteRoute::Update(site),
        (["sites", site], "DELETE") => SiteRoute::Delete(site),
        (["sites", _], _) => return Some(Err(method_not_allowed("GET, PATCH or DELETE"))),
        (["sites", site, "snippet"], "GET") => SiteRoute::Snippet(site),
        (["sites", site, "first-pageview"], "GET") => SiteRoute::FirstPageview(site),
        (["sites", site, "audit"], "GET") => SiteRoute::Audit(site),
        (["sites", _, "snippet" | "first-pageview" | "audit"], _) => {
            return Some(Err(method_not_allowed("GET")));
        }
        (["sites", site, "alerts"], "GET") => SiteRoute::Alerts(site),
        (["sites", site, "alerts"], "PUT") => SiteRoute::SetAlerts(site),
        (["sites", _, "alerts"], _) => return Some(Err(method_not_allowed("GET or PUT"))),
        (["sites", site, "proxy"], "GET") => SiteRoute::Proxy(site),
        (["sites", site, "proxy"], "POST") => SiteRoute::SetProxy(site),
        (["sites", _, "proxy"], _) => return Some(Err(method_not_allowed("GET or POST"))),
        (["sites", site, "alerts", "log"], "GET") => SiteRoute::AlertLog(site),
        (["sites", _, "alerts", "log"], _) => return Some(Err(method_not_allowed("GET"))),
        (["sites", site, name], method) => {
            let c = collection(name)?;
            match method {
                "GET" => SiteRoute::Items(site, c),
                "POST" if c != Collection::Members => SiteRoute::AddItem(site, c),
                _ if c == Collection::Members => return Some(Err(method_not_allowed("GET"))),
                _ => return Some(Err(method_not_allowed("GET or POST"))),
            }
        }
        (["sites", site, name, id], method) => {
            let c = collection(name)?;
            match (c, method) {
                (_, "DELETE") => SiteRoute::RemoveItem(site, c, id),
                (Collection::Members, "GET") => SiteRoute::Item(site, c, id),
                (Collection::Members, "PATCH") => SiteRoute::ChangeItem(site, c, id),
                (Collection::Members, _) => {
                    return Some(Err(method_not_allowed("GET, PATCH or DELETE")));
                }
                _ => return Some(Err(method_not_allowed("DELETE"))),
            }
        }
        _ => return None,
    };
    Some(Ok(route))
}

/// Runs a site route.
async fn dispatch_site<S: SiteStore + reports::ReportStore + alerts::AlertStore>(
    store: &S,
    config: &Config,
    request: &Request,
    route: SiteRoute<'_>,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    use Collection as C;
    let (s, r) = (store, request);
    match route {
        SiteRoute::List => sites::list(s, r, now).await,
        SiteRoute::Create => sites::create(s, config, r, now).await,
        SiteRoute::Get(site) => sites::get(s, r, site, now).await,
        SiteRoute::Update(site) => sites::update(s, config, r, site, now).await,
        SiteRoute::Delete(site) => sites::delete(s, r, site, now).await,
        SiteRoute::Snippet(site) => sites::snippet_of(s, config, r, site, now).await,
        SiteRoute::FirstPageview(site) => sites::first_pageview(s, r, site, now).await,
        SiteRoute::Audit(site) => audit::list(s, r, site, now).await,
        SiteRoute::Alerts(site) => alerts::get(s, r, site, now).await,
        SiteRoute::SetAlerts(site) => alerts::put(s, config, r, site, now).await,
        SiteRoute::AlertLog(site) => alerts::log(s, r, site, now).await,
        SiteRoute::Proxy(site) => proxy::get(s, r, site, now).await,
        SiteRoute::SetProxy(site) => proxy::change(s, config, r, site, now).await,
        SiteRoute::AcceptInvite => members::accept(s, config, r, now).await,
        SiteRoute::Items(site, C::Members) => members::members(s, r, site, now).await,
        SiteRoute::Items(site, c) => collection(s, config, r, site, c, Op::List, now).await,
        SiteRoute::AddItem(site, c) => collection(s, config, r, site, c, Op::Add, now).await,
        SiteRoute::Item(site, _, uid) => members::member(s, r, site, uid, now).await,
        SiteRoute::ChangeItem(site, _, uid) => {
            members::set_role(s, config, r, site, uid, now).await
        }
        SiteRoute::RemoveItem(site, C::Members, uid) => members::remove(s, r, site, uid, now).await,
        SiteRoute::RemoveItem(site, c, id) => {
            collection(s, config, r, site, c, Op::Remove(id), now).await
        }
    }
}

/// Serves a request to one of a site's collections ([`collection::serve`]).
async fn collection<S: CollectionStore>(
    s: &S,
    config: &Config,
    r: &Request,
    site: &str,
    c: Collection,
    op: Op<'_>,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    use collection::serve;
    match c {
        Collection::Goals => serve::<goals::Goals, _>(s, config, r, site, op, now).await,
        Collection::Funnels => serve::<goals::Funnels, _>(s, config, r, site, op, now).await,
        Collection::Shares => serve::<credentials::Shares, _>(s, config, r, site, op, now).await,
        Collection::Keys => serve::<credentials::Keys, _>(s, config, r, site, op, now).await,
        Collection::Invites => serve::<members::Invites, _>(s, config, r, site, op, now).await,
        Collection::Segments => serve::<saved::Segments, _>(s, config, r, site, op, now).await,
        Collection::Annotations => {
            serve::<saved::Annotations, _>(s, config, r, site, op, now).await
        }
        Collection::EmailReports => {
            serve::<recipients::Recipients, _>(s, config, r, site, op, now).await
        }
        Collection::Affiliates => {
            serve::<affiliates::Affiliates, _>(s, config, r, site, op, now).await
        }
        Collection::Members => Err(method_not_allowed("GET")),
    }
}

fn route<'a>(method: &str, segments: &[&'a str]) -> Result<Route<'a>, ConsoleError> {
    let route = match segments {
        ["setup"] => match method {
            "GET" => Route::SetupNeeded,
            _ => Route::Setup,
        },
        ["login"] => Route::Login,
        ["login", "totp"] => Route::LoginTotp,
        ["logout"] => Route::Logout,
        ["me"] => Route::Me,
        ["sessions"] => Route::Sessions,
        ["sessions", id] => Route::RevokeSession(id),
        ["totp", "setup"] => Route::TotpSetup,
        ["totp", "enable"] => Route::TotpEnable,
        ["totp", "disable"] => Route::TotpDisable,
        ["settings"] => Route::PutSettings,
        ["password", "forgot"] => Route::PasswordForgot,
        ["password", "reset"] => Route::PasswordReset,
        ["password", "change"] => Route::PasswordChange,
        ["users", uid, "reset"] => Route::ResetUser(uid),
        _ => {
            return Err(ConsoleError::not_found(
                "not_found",
                "no such console route",
            ));
        }
    };
    let allowed = match route {
        Route::SetupNeeded | Route::Me | Route::Sessions => "GET",
        Route::RevokeSession(_) => "DELETE",
        Route::PutSettings => "PUT",
        _ => "POST",
    };
    if method == allowed {
        Ok(route)
    } else {
        Err(ConsoleError::new(
            405,
            "method_not_allowed",
            format!("use {allowed}"),
        ))
    }
}

/// Handles one request under [`PREFIX`].
pub async fn handle<S: SiteStore + reports::ReportStore + alerts::AlertStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: Request,
) -> Response<Body> {
    if request.uri().path() == reports::PATH {
        // A report recipient's signed link: no session, no CSRF.
        return match reports::unsubscribe(store, &request).await {
            Ok(response) => response,
            Err(e) => error_response(&e),
        };
    }
    if request.uri().path() == page::PATH {
        return match request.method().as_str() {
            "GET" | "HEAD" => page::console(),
            _ => error_response(&ConsoleError::new(405, "method_not_allowed", "use GET")),
        };
    }
    // A request with an API key goes through the key guard first (a
    // failed key counts against its network; a forged tag is refused
    // unread), and gives its unit back unless the key was refused.
    let key = auth::header(&request, "authorization")
        .and_then(|h| tally_core::account::auth::bearer(Some(h)).ok())
        .map(str::to_owned);
    let taken = match &key {
        Some(key) => match guard::take_key(store, config, &request, key, clock.now()).await {
            Ok(taken) => Some(taken),
            Err(e) => return with_headers(error_response(&e)),
        },
        None => None,
    };
    let response = match Box::pin(dispatch(store, clock, config, &request)).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    };
    if let Some(check) = taken {
        guard::after_key(store, check, response.status() == 401).await;
    }
    with_headers(response)
}

/// The headers every console answer carries.
fn with_headers(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

async fn dispatch<S: SiteStore + reports::ReportStore + alerts::AlertStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Response<Body>, ConsoleError> {
    let path = request.uri().path();
    let rest = path
        .strip_prefix(PREFIX)
        .ok_or_else(|| ConsoleError::not_found("not_found", "no such console route"))?;
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let now = clock.now();
    if let Some(site_route) = site_route(request.method().as_str(), &segments) {
        return dispatch_site(store, config, request, site_route?, now).await;
    }
    let route = route(request.method().as_str(), &segments)?;
    match route {
        Route::SetupNeeded => return login::setup_needed(store).await,
        Route::Setup => return login::setup(store, config, request, now).await,
        Route::Login => return login::login(store, config, request, now).await,
        Route::LoginTotp => return login::login_totp(store, config, request, now).await,
        Route::PasswordForgot => return password::forgot(store, config, request, now).await,
        Route::PasswordReset => return password::reset(store, config, request, now).await,
        _ => {}
    }
    let signed = auth::signed_in(store, request, now).await?;
    if signed.must_enable_totp() && !route.open_before_totp() {
        return Err(ConsoleError::totp_required());
    }
    match route {
        Route::Logout => login::logout(store, &signed).await,
        Route::Me => account::me(store, &signed).await,
        Route::Sessions => account::sessions(store, &signed, now).await,
        Route::RevokeSession(id) => account::revoke(store, &signed, id).await,
        Route::TotpSetup => account::totp_setup(store, config, &signed).await,
        Route::TotpEnable => account::totp_enable(store, config, request, &signed, now).await,
        Route::TotpDisable => account::totp_disable(store, config, request, &signed, now).await,
        Route::PutSettings => account::put_settings(store, config, request, &signed, now).await,
        Route::PasswordChange => password::change(store, config, request, &signed, now).await,
        Route::ResetUser(uid) => {
            password::owner_reset(store, config, request, &signed, uid, now).await
        }
        Route::SetupNeeded
        | Route::Setup
        | Route::Login
        | Route::LoginTotp
        | Route::PasswordForgot
        | Route::PasswordReset => Err(ConsoleError::internal()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_method_and_path() {
        assert_eq!(route("GET", &["setup"]), Ok(Route::SetupNeeded));
        assert_eq!(route("POST", &["setup"]), Ok(Route::Setup));
        assert_eq!(
            route("DELETE", &["sessions", "abc"]),
            Ok(Route::RevokeSession("abc"))
        );
        assert_eq!(route("GET", &["login"]).map_err(|e| e.status), Err(405));
        assert_eq!(route("GET", &["nope"]).map_err(|e| e.status), Err(404));
        assert_eq!(route("POST", &["settings"]).map_err(|e| e.status), Err(405));
        assert_eq!(
            route("POST", &["password", "forgot"]),
            Ok(Route::PasswordForgot)
        );
        assert_eq!(
            route("POST", &["users", "0123456789abcdef", "reset"]),
            Ok(Route::ResetUser("0123456789abcdef"))
        );
        assert_eq!(
            route("GET", &["password", "change"]).map_err(|e| e.status),
            Err(405)
        );
    }

    #[test]
    fn routes_site_paths() {
        let r = |m: &str, p: &[&'static str]| site_route(m, p).map(|r| r.map_err(|e| e.status));
        assert_eq!(r("GET", &["sites"]), Some(Ok(SiteRoute::List)));
        assert_eq!(r("POST", &["sites"]), Some(Ok(SiteRoute::Create)));
        assert_eq!(
            r("PATCH", &["sites", "a"]),
            Some(Ok(SiteRoute::Update("a")))
        );
        assert_eq!(
            r("POST", &["sites", "a", "goals"]),
            Some(Ok(SiteRoute::AddItem("a", Collection::Goals)))
        );
        assert_eq!(
            r("PATCH", &["sites", "a", "members", "u"]),
            Some(Ok(SiteRoute::ChangeItem("a", Collection::Members, "u")))
        );
        assert_eq!(r("PATCH", &["sites", "a", "goals", "g"]), Some(Err(405)));
        assert_eq!(r("POST", &["sites", "a", "members"]), Some(Err(405)));
        assert_eq!(
            r(
                "DELETE",
                &["sites", "a", "email-reports", "0123456789abcdef"]
            ),
            Some(Ok(SiteRoute::RemoveItem(
                "a",
                Collection::EmailReports,
                "0123456789abcdef"
            )))
        );
        assert_eq!(
            r("PUT", &["sites", "a", "alerts"]),
            Some(Ok(SiteRoute::SetAlerts("a")))
        );
        assert_eq!(
            r("GET", &["sites", "a", "alerts", "log"]),
            Some(Ok(SiteRoute::AlertLog("a")))
        );
        assert_eq!(r("POST", &["sites", "a", "alerts"]), Some(Err(405)));
        assert_eq!(
            r("DELETE", &["sites", "a", "alerts", "log"]),
            Some(Err(405))
        );
        assert_eq!(r("GET", &["sites", "a", "nope"]), None);
        assert_eq!(
            r("POST", &["invites", "accept"]),
            Some(Ok(SiteRoute::AcceptInvite))
        );
        assert_eq!(r("GET", &["me"]), None);
    }
}
