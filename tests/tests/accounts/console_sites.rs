//! The console's site routes end to end, through the real handler and the
//! embedded DynamoDB: the role matrix (every caller against every site
//! route, the state read back from the store to see whether the change
//! happened, and an audit entry for each one that did), invitations
//! (single use, expiry, new and existing users, mail), a goal made in the
//! console answering the query API's goals report, and a site made by the
//! console and by the CLI being the same item.

#![allow(clippy::unwrap_used)]

use lambda_http::Request;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tally_console::mail::{MailFuture, Mailer, Message};
use tally_console::{Config, handle};
use tally_core::account::share::ShareSpec;
use tally_core::account::{ConsoleSession, KeyScope, Membership, Role, User, token};
use tally_core::engine::funnel::FunnelSpec;
use tally_core::engine::goal::GoalSpec;
use tally_core::ingest::site::Site;
use tally_core::{DAY_MS, HOUR_MS};
use tally_store::Store;
use tally_store::accounts::AuditLog;
use tally_store::clock::ManualClock;
use tally_store::sites::ApiKeyRecord;
use tally_tests::Harness;
use tally_tests::console::{Browser, START, error_code};

const CSRF: &str = "0123456789abcdef0123456789abcdef";

/// Who calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    Viewer,
    Admin,
    Owner,
    InstanceOwner,
    ReadKey,
    ConfigureKey,
    Nobody,
    /// The owner of another site.
    Outsider,
}

const CALLERS: [Caller; 8] = [
    Caller::Viewer,
    Caller::Admin,
    Caller::Owner,
    Caller::InstanceOwner,
    Caller::ReadKey,
    Caller::ConfigureKey,
    Caller::Nobody,
    Caller::Outsider,
];

/// What a route needs, as the design's table says it (written out here,
/// not taken from the code under test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Read reports, list goals and funnels: every member and key.
    Read,
    /// Configure: admins, owners, `configure` keys.
    Configure,
    /// Configure, people only (managing API keys).
    ConfigurePeople,
    /// Owners only (members, invites, audit, deleting the site).
    Owner,
    /// Every signed-in member, never a key (personal segments and
    /// annotations).
    People,
}

/// The status a caller gets: `Ok(success)` or the refusal.
fn expected(need: Need, caller: Caller) -> Result<(), u16> {
    use Caller::*;
    let allowed = match need {
        Need::Read => matches!(
            caller,
            Viewer | Admin | Owner | InstanceOwner | ReadKey | ConfigureKey
        ),
        Need::Configure => matches!(caller, Admin | Owner | InstanceOwner | ConfigureKey),
        Need::ConfigurePeople => matches!(caller, Admin | Owner | InstanceOwner),
        Need::Owner => matches!(caller, Owner | InstanceOwner),
        Need::People => matches!(caller, Viewer | Admin | Owner | InstanceOwner),
    };
    match (allowed, caller) {
        (true, _) => Ok(()),
        (false, Nobody) => Err(401),
        (false, _) => Err(403),
    }
}

/// A mailer that keeps what it was asked to send.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<Message>>);

impl Mailer for Recorder {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        self.0.lock().unwrap().push(message.clone());
        Box::pin(async { Ok(()) })
    }
}

struct Rig {
    store: Store,
    clock: ManualClock,
    config: Config,
    mail: Arc<Recorder>,
    users: Vec<(Caller, User, String)>,
    _h: Harness,
}

fn user(seed: u8, email: &str, instance_owner: bool) -> User {
    User {
        id: token::user_id_from_bytes(&[seed; 8]),
        email: email.to_owned(),
        // Never checked: these users sign in by a stored session.
        password: "unused".into(),
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        instance_owner,
        created: START,
        known_devices: Vec::new(),
    }
}

/// The keys and ids one fixture site is made with.
struct Fixture {
    site: String,
    read_key: String,
    configure_key: String,
    share_id: String,
    share_hash: String,
    admin_key_id: String,
    admin_key_hash: String,
    invite_id: String,
    invite_hash: String,
    target_uid: String,
}

impl Rig {
    async fn start() -> Self {
        let h = Harness::start().await;
        let mail = Arc::new(Recorder::default());
        let mut config = Config::new(&tally_core::ingest::salt::Secret::new(
            b"sites tests".to_vec(),
        ));
        config.mailer = Some(mail.clone());
        config.ingest_url = Some("https://in.example.com".into());
        let mut rig = Self {
            store: h.store.clone(),
            clock: ManualClock::at(START),
            config,
            mail,
            users: Vec::new(),
            _h: h,
        };
        for (seed, caller, email, io) in [
            (1, Caller::Viewer, "viewer@example.com", false),
            (2, Caller::Admin, "admin@example.com", false),
            (3, Caller::Owner, "owner@example.com", false),
            (4, Caller::InstanceOwner, "root@example.com", true),
            (5, Caller::Outsider, "out@example.com", false),
        ] {
            let u = user(seed, email, io);
            assert!(rig.store.create_user(&u).await.unwrap());
            let t = token::session_token(&u.id, &[seed; 20]);
            let session = ConsoleSession::new(
                token::hash_token(&t),
                &u.id,
                "test".into(),
                CSRF.into(),
                START,
            );
            rig.store.put_session(&session).await.unwrap();
            rig.users.push((caller, u, t));
        }
        // The outsider owns a site of their own.
        let other = Site::new("other", &["other.example".into()], "UTC", START).unwrap();
        rig.store.create_site(&other).await.unwrap();
        rig.member("other", Caller::Outsider, Role::Owner).await;
        let target = user(6, "target@example.com", false);
        assert!(rig.store.create_user(&target).await.unwrap());
        rig
    }

    fn user_of(&self, caller: Caller) -> &User {
        &self.users.iter().find(|(c, _, _)| *c == caller).unwrap().1
    }

    async fn member(&self, site: &str, caller: Caller, role: Role) {
        let u = self.user_of(caller);
        self.store
            .put_membership(&Membership {
                site: site.into(),
                uid: u.id.clone(),
                role,
                email: u.email.clone(),
            })
            .await
            .unwrap();
    }

    /// A site with its three members, two keys, a goal, a funnel, a shared
    /// link, an admin's key, an invite and one more member to change.
    async fn fixture(&self, n: usize) -> Fixture {
        let site = format!("s{n}");
        let s = Site::new(&site, &[format!("{site}.example")], "UTC", START).unwrap();
        self.store.create_site(&s).await.unwrap();
        self.member(&site, Caller::Viewer, Role::Viewer).await;
        self.member(&site, Caller::Admin, Role::Admin).await;
        self.member(&site, Caller::Owner, Role::Owner).await;
        let target = user(6, "target@example.com", false);
        self.store
            .put_membership(&Membership {
                site: site.clone(),
                uid: target.id.clone(),
                role: Role::Viewer,
                email: target.email.clone(),
            })
            .await
            .unwrap();
        let key = |seed: u8, scope, owner: Option<String>| {
            let k = tally_core::account::auth::key_from_bytes(&site, &[seed; 20]);
            let r = ApiKeyRecord::new(&k, "fixture", owner, scope, START).unwrap();
            (k, r)
        };
        let (read_key, r) = key(1, KeyScope::Read, None);
        self.store.put_api_key(&site, &r).await.unwrap();
        let (configure_key, r) = key(2, KeyScope::Configure, None);
        self.store.put_api_key(&site, &r).await.unwrap();
        let admin = self.user_of(Caller::Admin).id.clone();
        let (_, admin_key) = key(3, KeyScope::Read, Some(admin));
        self.store.put_api_key(&site, &admin_key).await.unwrap();
        let goal = GoalSpec {
            event: Some("Signup".into()),
            ..GoalSpec::default()
        }
        .build(START)
        .unwrap();
        self.store.put_goal(&site, &goal).await.unwrap();
        let funnel = FunnelSpec {
            name: "F1".into(),
            steps: vec!["/".into(), "/pricing".into()],
            strict: false,
        }
        .build(START)
        .unwrap();
        self.store.put_funnel(&site, &funnel).await.unwrap();
        let affiliate = tally_core::product::conversion::AffiliateSpec {
            slug: "alice".into(),
            rate: Some("0.1".into()),
            fixed: None,
            currency: "EUR".into(),
        }
        .build(START)
        .unwrap();
        assert!(
            self.store
                .create_affiliate(&site, &affiliate)
                .await
                .unwrap()
        );
        let (share, _) = ShareSpec::default()
            .build(&site, &[1; 16], &[4; 20], None, START)
            .unwrap();
        self.store.put_share(&site, &share).await.unwrap();
        let segment = tally_core::product::saved_segment::SegmentSpec {
            name: "Blog".into(),
            filter: "page==/blog/*".into(),
            personal: false,
        }
        .build(5, "cli", START)
        .unwrap();
        self.store.put_saved_segment(&site, &segment).await.unwrap();
        let note = tally_core::product::annotation::AnnotationSpec {
            date: "2026-01-02".into(),
            text: "launch".into(),
            personal: false,
        }
        .build(6, "cli", START)
        .unwrap();
        self.store.put_annotation(&site, &note).await.unwrap();
        let recipient = tally_core::product::report_mail::SubscriptionSpec {
            email: "boss@example.com".into(),
            weekly: true,
            monthly: false,
        }
        .build(&[], START)
        .unwrap();
        self.store
            .put_report_subscription(&site, &recipient)
            .await
            .unwrap();
        let invite_token = token::invite_token(&site, &[5; 20]);
        let invite = tally_core::account::Invite {
            hash: token::hash_token(&invite_token),
            site: site.clone(),
            role: Role::Viewer,
            email: None,
            created: START,
            expires: START + DAY_MS,
            by: self.user_of(Caller::Owner).id.clone(),
        };
        self.store.put_invite(&invite).await.unwrap();
        Fixture {
            site,
            read_key,
            configure_key,
            share_id: share.hash[..12].to_owned(),
            share_hash: share.hash,
            admin_key_id: admin_key.hash[..12].to_owned(),
            admin_key_hash: admin_key.hash,
            invite_id: invite.hash[..12].to_owned(),
            invite_hash: invite.hash,
            target_uid: target.id,
        }
    }

    fn request(
        &self,
        caller: Caller,
        fixture: Option<&Fixture>,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Request {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("/api/console/{path}"))
            .header("host", "tally.example.com")
            .header("origin", "https://tally.example.com");
        match caller {
            Caller::Nobody => {}
            Caller::ReadKey | Caller::ConfigureKey => {
                let f = fixture.unwrap();
                let key = if caller == Caller::ReadKey {
                    &f.read_key
                } else {
                    &f.configure_key
                };
                b = b.header("authorization", format!("Bearer {key}"));
            }
            _ => {
                let t = &self.users.iter().find(|(c, _, _)| *c == caller).unwrap().2;
                b = b
                    .header("cookie", format!("tally_session={t}"))
                    .header("x-csrf-token", CSRF);
            }
        }
        // As API Gateway passes it, from one client address.
        Browser::new("198.51.100.7").build(b, body.cloned())
    }

    async fn send(&self, request: Request) -> (u16, Value) {
        let response = handle(&self.store, &self.clock, &self.config, request).await;
        tally_tests::status_and_json(response)
    }

    async fn call(
        &self,
        caller: Caller,
        fixture: Option<&Fixture>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.send(self.request(caller, fixture, method, path, body.as_ref()))
            .await
    }

    async fn audit_len(&self, site: &str) -> usize {
        self.store
            .audit(&AuditLog::Site(site.into()), 100, None)
            .await
            .unwrap()
            .0
            .len()
    }

    /// What a route may change, read from the store (not through the
    /// console).
    async fn state(&self, f: &Fixture, probe: Probe) -> String {
        let s = &self.store;
        let site = f.site.as_str();
        match probe {
            Probe::Nothing => String::new(),
            Probe::Site => format!("{:?}", s.site_consistent(site).await.unwrap()),
            Probe::Goals => format!("{:?}", s.goals(site).await.unwrap()),
            Probe::Funnels => format!("{:?}", s.funnels(site).await.unwrap()),
            Probe::Affiliates => format!("{:?}", s.affiliates(site).await.unwrap()),
            Probe::Segments => format!("{:?}", s.saved_segments(site).await.unwrap()),
            Probe::Annotations => format!("{:?}", s.annotations(site, None).await.unwrap()),
            Probe::Recipients => format!("{:?}", s.report_subscriptions(site).await.unwrap()),
            Probe::Alerts => format!("{:?}", s.alert_settings(site).await.unwrap()),
            Probe::Shares => {
                let shares = s.shares(site).await.unwrap();
                let target = shares.iter().find(|x| x.hash == f.share_hash).cloned();
                format!("{} {:?}", shares.len(), target.map(|t| t.revoked_at))
            }
            Probe::Keys => {
                let keys = s.api_keys(site).await.unwrap();
                let target = keys.iter().find(|k| k.hash == f.admin_key_hash).cloned();
                format!("{} {:?}", keys.len(), target.map(|t| t.revoked_at))
            }
            Probe::Members => format!(
                "{:?} {:?}",
                s.membership(site, &f.target_uid).await.unwrap(),
                s.user_sites(&f.target_uid).await.unwrap()
            ),
            Probe::Invites => {
                let invites = s.invites(site).await.unwrap();
                let target = invites.iter().any(|i| i.hash == f.invite_hash);
                format!("{} {target}", invites.len())
            }
        }
    }
}

/// The part of the store a route changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Nothing,
    Site,
    Goals,
    Funnels,
    Affiliates,
    Segments,
    Annotations,
    Recipients,
    Alerts,
    Shares,
    Keys,
    Members,
    Invites,
}

/// One site route: method, path under `sites/{site}`, body, what it needs,
/// its success status, what it changes.
struct Case {
    method: &'static str,
    path: String,
    body: Option<Value>,
    need: Need,
    ok: u16,
    probe: Probe,
}

fn cases(f: &Fixture) -> Vec<Case> {
    let site = &f.site;
    let case = |method, path: String, body, need, ok, probe| Case {
        method,
        path,
        body,
        need,
        ok,
        probe,
    };
    use Need::*;
    vec![
        case(
            "GET",
            format!("sites/{site}"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "PATCH",
            format!("sites/{site}"),
            Some(json!({"timezone": "Europe/Berlin", "exclude_paths": ["/admin/*"]})),
            Configure,
            200,
            Probe::Site,
        ),
        case(
            "DELETE",
            format!("sites/{site}"),
            None,
            Owner,
            202,
            Probe::Site,
        ),
        case(
            "GET",
            format!("sites/{site}/snippet"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "GET",
            format!("sites/{site}/first-pageview"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "GET",
            format!("sites/{site}/goals"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/goals"),
            Some(json!({"page": "/pricing"})),
            Configure,
            201,
            Probe::Goals,
        ),
        case(
            "DELETE",
            format!("sites/{site}/goals/signup"),
            None,
            Configure,
            200,
            Probe::Goals,
        ),
        case(
            "GET",
            format!("sites/{site}/funnels"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/funnels"),
            Some(json!({"name": "Buy", "steps": ["/pricing", "event:Signup"]})),
            Configure,
            201,
            Probe::Funnels,
        ),
        case(
            "DELETE",
            format!("sites/{site}/funnels/f1"),
            None,
            Configure,
            200,
            Probe::Funnels,
        ),
        // Affiliates' terms are read as goals are; defining and removing
        // them configures.
        case(
            "GET",
            format!("sites/{site}/affiliates"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/affiliates"),
            Some(json!({"slug": "bob", "fixed": "5.00", "currency": "usd"})),
            Configure,
            201,
            Probe::Affiliates,
        ),
        case(
            "DELETE",
            format!("sites/{site}/affiliates/alice"),
            None,
            Configure,
            200,
            Probe::Affiliates,
        ),
        case(
            "GET",
            format!("sites/{site}/segments"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/segments"),
            Some(json!({"name": "DE", "filter": "country==DE"})),
            Configure,
            201,
            Probe::Segments,
        ),
        case(
            "POST",
            format!("sites/{site}/segments"),
            Some(json!({"name": "Mine", "filter": "country==DE", "personal": true})),
            People,
            201,
            Probe::Segments,
        ),
        case(
            "DELETE",
            format!("sites/{site}/segments/5"),
            None,
            Configure,
            200,
            Probe::Segments,
        ),
        case(
            "GET",
            format!("sites/{site}/annotations"),
            None,
            Read,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/annotations"),
            Some(json!({"date": "2026-01-03", "text": "campaign"})),
            Configure,
            201,
            Probe::Annotations,
        ),
        case(
            "POST",
            format!("sites/{site}/annotations"),
            Some(json!({"date": "2026-01-03", "text": "note", "personal": true})),
            People,
            201,
            Probe::Annotations,
        ),
        case(
            "DELETE",
            format!("sites/{site}/annotations/6"),
            None,
            Configure,
            200,
            Probe::Annotations,
        ),
        // Recipients' addresses are not the viewers' to read.
        case(
            "GET",
            format!("sites/{site}/email-reports"),
            None,
            Configure,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/email-reports"),
            Some(json!({"email": "Team@Example.com", "weekly": true, "monthly": true})),
            Configure,
            201,
            Probe::Recipients,
        ),
        case(
            "DELETE",
            // The first 8 bytes of SHA-256("boss@example.com"), hex.
            format!("sites/{site}/email-reports/f632a98a3d7ca8bd"),
            None,
            Configure,
            200,
            Probe::Recipients,
        ),
        // Alert settings hold addresses, a Slack URL and the signing
        // secret: configure, as the email reports.
        case(
            "GET",
            format!("sites/{site}/alerts"),
            None,
            Configure,
            200,
            Probe::Nothing,
        ),
        case(
            "PUT",
            format!("sites/{site}/alerts"),
            Some(json!({"enabled": true, "emails": ["ops@example.com"], "cooldown_hours": 12})),
            Configure,
            200,
            Probe::Alerts,
        ),
        case(
            "GET",
            format!("sites/{site}/alerts/log"),
            None,
            Configure,
            200,
            Probe::Nothing,
        ),
        // The trusted proxy's secret speaks for any visitor: configure.
        case(
            "GET",
            format!("sites/{site}/proxy"),
            None,
            Configure,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/proxy"),
            Some(json!({"networks": ["cloudflare"]})),
            Configure,
            200,
            Probe::Site,
        ),
        case(
            "GET",
            format!("sites/{site}/shares"),
            None,
            Configure,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/shares"),
            Some(json!({"label": "team", "filter": "page==/blog/*", "expires": "30d"})),
            Configure,
            201,
            Probe::Shares,
        ),
        case(
            "DELETE",
            format!("sites/{site}/shares/{}", f.share_id),
            None,
            Configure,
            200,
            Probe::Shares,
        ),
        case(
            "GET",
            format!("sites/{site}/keys"),
            None,
            ConfigurePeople,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/keys"),
            Some(json!({"label": "ci", "scope": "configure"})),
            ConfigurePeople,
            201,
            Probe::Keys,
        ),
        case(
            "DELETE",
            format!("sites/{site}/keys/{}", f.admin_key_id),
            None,
            ConfigurePeople,
            200,
            Probe::Keys,
        ),
        case(
            "GET",
            format!("sites/{site}/members"),
            None,
            Owner,
            200,
            Probe::Nothing,
        ),
        case(
            "GET",
            format!("sites/{site}/members/{}", f.target_uid),
            None,
            Owner,
            200,
            Probe::Nothing,
        ),
        case(
            "PATCH",
            format!("sites/{site}/members/{}", f.target_uid),
            Some(json!({"role": "admin"})),
            Owner,
            200,
            Probe::Members,
        ),
        case(
            "DELETE",
            format!("sites/{site}/members/{}", f.target_uid),
            None,
            Owner,
            200,
            Probe::Members,
        ),
        case(
            "GET",
            format!("sites/{site}/invites"),
            None,
            Owner,
            200,
            Probe::Nothing,
        ),
        case(
            "POST",
            format!("sites/{site}/invites"),
            Some(json!({"role": "viewer", "email": "new@example.com"})),
            Owner,
            201,
            Probe::Invites,
        ),
        case(
            "DELETE",
            format!("sites/{site}/invites/{}", f.invite_id),
            None,
            Owner,
            200,
            Probe::Invites,
        ),
        case(
            "GET",
            format!("sites/{site}/audit"),
            None,
            Owner,
            200,
            Probe::Nothing,
        ),
    ]
}

/// Every caller against every site route, each on a fresh site: the
/// status is the matrix's, the store changed exactly when it allowed the
/// change, and each change left an audit entry.
#[tokio::test]
async fn every_caller_against_every_site_route() {
    let rig = Rig::start().await;
    let probe_fixture = rig.fixture(0).await;
    let routes = cases(&probe_fixture).len();
    let mut n = 1;
    let mut checked = 0;
    for route in 0..routes {
        for caller in CALLERS {
            let f = rig.fixture(n).await;
            n += 1;
            let case = cases(&f).swap_remove(route);
            let label = format!("{caller:?} {} {}", case.method, case.path);
            let before = rig.state(&f, case.probe).await;
            let audit_before = rig.audit_len(&f.site).await;
            let (status, body) = rig
                .call(caller, Some(&f), case.method, &case.path, case.body.clone())
                .await;
            let after = rig.state(&f, case.probe).await;
            let audited = rig.audit_len(&f.site).await > audit_before;
            match expected(case.need, caller) {
                Ok(()) => {
                    assert_eq!(status, case.ok, "{label}: {body}");
                    if case.probe != Probe::Nothing {
                        assert_ne!(before, after, "{label}: the change happened");
                        assert!(audited, "{label}: the change was audited");
                    }
                }
                Err(refused) => {
                    assert_eq!(status, refused, "{label}: {body}");
                    let code = error_code(&body).unwrap_or_default();
                    if refused == 403 {
                        assert_eq!(code, "forbidden", "{label}");
                    }
                    assert_eq!(before, after, "{label}: nothing changed");
                    assert!(!audited, "{label}: nothing audited");
                }
            }
            if case.probe == Probe::Nothing {
                assert_eq!(before, after, "{label}: a read changes nothing");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 44 * CALLERS.len());
}

/// `GET sites` lists each caller's sites with their role; `POST sites` is
/// the instance owner's, who becomes the new site's owner member.
#[tokio::test]
async fn listing_and_creating_sites() {
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let ids = |body: &Value| -> Vec<(String, String)> {
        body["sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_owned(),
                    s["role"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let (status, body) = rig.call(Caller::Admin, None, "GET", "sites", None).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&body), [(f.site.clone(), "admin".to_owned())]);
    let (_, body) = rig
        .call(Caller::InstanceOwner, None, "GET", "sites", None)
        .await;
    assert_eq!(ids(&body).len(), 2, "an instance owner sees every site");
    let (status, _) = rig.call(Caller::Nobody, None, "GET", "sites", None).await;
    assert_eq!(status, 401);
    let (status, _) = rig
        .call(Caller::ReadKey, Some(&f), "GET", "sites", None)
        .await;
    assert_eq!(status, 401, "a key is not a signed-in user");

    let new = json!({"domains": ["www.new.example"], "timezone": "Europe/Paris"});
    for caller in [Caller::Owner, Caller::Admin, Caller::Nobody] {
        let (status, _) = rig
            .call(caller, None, "POST", "sites", Some(new.clone()))
            .await;
        assert_ne!(status, 201, "{caller:?}");
    }
    assert!(rig.store.site("new.example").await.unwrap().is_none());
    let (status, body) = rig
        .call(
            Caller::InstanceOwner,
            None,
            "POST",
            "sites",
            Some(new.clone()),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["id"], "new.example");
    let creator = rig.user_of(Caller::InstanceOwner).id.clone();
    let m = rig
        .store
        .membership("new.example", &creator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.role, Role::Owner);
    let (status, body) = rig
        .call(Caller::InstanceOwner, None, "POST", "sites", Some(new))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("site_exists"))
    );
    let bad = json!({"domains": ["not a domain"]});
    let (status, body) = rig
        .call(Caller::InstanceOwner, None, "POST", "sites", Some(bad))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("invalid_domain"))
    );
    let (entries, _) = rig
        .store
        .audit(&AuditLog::Instance, 10, None)
        .await
        .unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e.target == "new.example" && e.actor == creator)
    );
}

/// The last owner can be neither demoted nor removed; validation errors
/// of a site change are the CLI's, and change nothing.
#[tokio::test]
async fn a_site_keeps_an_owner_and_refuses_bad_settings() {
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let owner = rig.user_of(Caller::Owner).id.clone();
    let path = format!("sites/{}/members/{owner}", f.site);
    let (status, body) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "PATCH",
            &path,
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("last_owner"))
    );
    let (status, _) = rig
        .call(Caller::InstanceOwner, Some(&f), "DELETE", &path, None)
        .await;
    assert_eq!(status, 409);
    // With a second owner, the first may step down.
    let target = format!("sites/{}/members/{}", f.site, f.target_uid);
    let (status, _) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "PATCH",
            &target,
            Some(json!({"role": "owner"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = rig
        .call(Caller::Owner, Some(&f), "DELETE", &path, None)
        .await;
    assert_eq!(status, 200);
    assert!(
        rig.store
            .membership(&f.site, &owner)
            .await
            .unwrap()
            .is_none()
    );

    let before = rig.store.site(&f.site).await.unwrap();
    for (body, code) in [
        (json!({"timezone": "Mars/Base"}), "invalid_timezone"),
        (json!({"domains": []}), "invalid_domain"),
        (json!({"exclude_networks": ["nope"]}), "invalid_network"),
        (json!({"retention_days": 0}), "invalid_retention"),
        (json!({"colour": "red"}), "invalid_body"),
    ] {
        let (status, answer) = rig
            .call(
                Caller::Admin,
                Some(&f),
                "PATCH",
                &format!("sites/{}", f.site),
                Some(body),
            )
            .await;
        assert_eq!((status, error_code(&answer)), (400, Some(code)));
    }
    assert_eq!(rig.store.site(&f.site).await.unwrap(), before);
    let (_, snippet) = rig
        .call(
            Caller::Viewer,
            Some(&f),
            "GET",
            &format!("sites/{}/snippet", f.site),
            None,
        )
        .await;
    assert_eq!(
        snippet["snippet"],
        format!(
            "<script defer data-site=\"{}\" src=\"https://in.example.com/script.js\"></script>",
            f.site
        )
    );
}

/// Invitations: made by an owner (mailed, the link and token answered),
/// accepted once by a new user (who is signed in) or by a signed-in user;
/// a second use, an expired or a revoked invite change nothing.
#[tokio::test]
async fn invitations_are_single_use_and_expire() {
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let invite = |email: Option<&str>, role: &str| {
        let mut body = json!({"role": role});
        if let Some(e) = email {
            body["email"] = json!(e);
        }
        body
    };
    let path = format!("sites/{}/invites", f.site);
    let (status, made) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "POST",
            &path,
            Some(invite(Some("New@Example.com"), "admin")),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let t = made["token"].as_str().unwrap().to_owned();
    assert!(t.starts_with("ti_"));
    assert_eq!(
        made["link"],
        format!("https://tally.example.com/console#invite={t}")
    );
    assert_eq!(made["mailed"], true);
    {
        let mail = rig.mail.0.lock().unwrap();
        assert_eq!(mail.len(), 1);
        assert_eq!(mail[0].to, "new@example.com");
        assert!(mail[0].text.contains(&t));
    }
    // Only the invited address may use it.
    let accept =
        |body: Value| rig.request(Caller::Nobody, None, "POST", "invites/accept", Some(&body));
    let (status, _) = rig
        .send(accept(
            json!({"token": t, "email": "other@example.com", "password": "long enough password"}),
        ))
        .await;
    assert_eq!(status, 403);
    let (status, me) = rig
        .send(accept(
            json!({"token": t, "password": "long enough password"}),
        ))
        .await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["user"]["email"], "new@example.com");
    let new_user = rig
        .store
        .user_by_email("new@example.com")
        .await
        .unwrap()
        .unwrap();
    let m = rig
        .store
        .membership(&f.site, &new_user.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.role, Role::Admin);
    // Single use.
    let (status, body) = rig
        .send(accept(
            json!({"token": t, "email": "late@example.com", "password": "long enough password"}),
        ))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (410, json!("invite_invalid"))
    );
    assert!(
        rig.store
            .user_by_email("late@example.com")
            .await
            .unwrap()
            .is_none()
    );

    // A signed-in user joins with their own account.
    let (_, made) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "POST",
            &path,
            Some(invite(None, "viewer")),
        )
        .await;
    let t2 = made["token"].as_str().unwrap().to_owned();
    let body = json!({"token": t2});
    let (status, me) = rig
        .send(rig.request(
            Caller::Outsider,
            None,
            "POST",
            "invites/accept",
            Some(&body),
        ))
        .await;
    assert_eq!(status, 200, "{me}");
    let outsider = rig.user_of(Caller::Outsider).id.clone();
    assert!(
        rig.store
            .membership(&f.site, &outsider)
            .await
            .unwrap()
            .is_some()
    );
    let (status, _) = rig
        .send(rig.request(
            Caller::Outsider,
            None,
            "POST",
            "invites/accept",
            Some(&body),
        ))
        .await;
    assert_eq!(status, 410);

    // Expired after 7 days.
    let (_, made) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "POST",
            &path,
            Some(invite(None, "viewer")),
        )
        .await;
    let t3 = made["token"].as_str().unwrap().to_owned();
    rig.clock.set(START + 7 * DAY_MS);
    let (status, _) = rig
        .send(accept(
            json!({"token": t3, "email": "slow@example.com", "password": "long enough password"}),
        ))
        .await;
    assert_eq!(status, 410);
    assert!(
        rig.store
            .user_by_email("slow@example.com")
            .await
            .unwrap()
            .is_none()
    );
    rig.clock.set(START);

    // Revoked.
    let (_, made) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "POST",
            &path,
            Some(invite(None, "viewer")),
        )
        .await;
    let t4 = made["token"].as_str().unwrap().to_owned();
    let id = made["invite"]["id"].as_str().unwrap().to_owned();
    let (status, _) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "DELETE",
            &format!("{path}/{id}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = rig
        .send(accept(
            json!({"token": t4, "email": "gone@example.com", "password": "long enough password"}),
        ))
        .await;
    assert_eq!(status, 410);
    // A token of a site's shape but never issued.
    let forged = token::invite_token(&f.site, &[0xee; 20]);
    let (status, _) = rig
        .send(accept(
            json!({"token": forged, "email": "x@example.com", "password": "long enough password"}),
        ))
        .await;
    assert_eq!(status, 410);

    let (_, log) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "GET",
            &format!("sites/{}/audit?limit=100", f.site),
            None,
        )
        .await;
    let actions: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "invite_changed").count(),
        5
    );
    assert_eq!(
        actions.iter().filter(|a| **a == "member_changed").count(),
        2
    );
}

/// A goal made in the console counts in the query API's goals report; a
/// configure key may make one, a read key may not.
#[tokio::test]
async fn a_console_goal_answers_the_goals_report() {
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let site = rig.store.site(&f.site).await.unwrap().unwrap();
    let now = START;
    let events = tally_tests::seed::traffic(&site, now - 2 * DAY_MS, 2, 40, 3);
    tally_tests::seed::store_events(&rig.store, &site, &events).await;
    // The fixture's goal is gone; the console makes it again, and another.
    rig.store.delete_goal(&f.site, "signup").await.unwrap();
    let path = format!("sites/{}/goals", f.site);
    let (status, _) = rig
        .call(
            Caller::ReadKey,
            Some(&f),
            "POST",
            &path,
            Some(json!({"event": "Download"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, goal) = rig
        .call(
            Caller::ConfigureKey,
            Some(&f),
            "POST",
            &path,
            Some(json!({"event": "Signup"})),
        )
        .await;
    assert_eq!(status, 201, "{goal}");
    assert_eq!(goal["id"], "signup");
    let (status, _) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &path,
            Some(json!({"event": "Signup"})),
        )
        .await;
    assert_eq!(status, 409, "names are unique");

    let api = tally_tests::Api {
        query: tally_query::store::DynamoQuery::new(rig.store.clone()),
        site: f.site.clone(),
        key: f.read_key.clone(),
        now,
    };
    let report = api
        .get(&tally_tests::raw_only(), "breakdown/goals?period=7d")
        .await;
    let text = report.to_string();
    assert!(text.contains("\"Signup\""), "{text}");
    assert!(!text.contains("\"Download\""), "no goal, no row: {text}");
    let signups = events
        .iter()
        .filter(|e| e.event.name.as_deref() == Some("Signup"))
        .count();
    assert!(signups > 0);

    let (_, seen) = rig
        .call(
            Caller::Viewer,
            Some(&f),
            "GET",
            &format!("sites/{}/first-pageview", f.site),
            None,
        )
        .await;
    assert_eq!(
        seen["seen"],
        json!(events.iter().any(|e| e.event.ts > now - 3 * HOUR_MS))
    );
    let empty = rig.fixture(2).await;
    let (_, seen) = rig
        .call(
            Caller::Viewer,
            Some(&empty),
            "GET",
            &format!("sites/{}/first-pageview", empty.site),
            None,
        )
        .await;
    assert_eq!(seen["seen"], false);
}

/// The console and the CLI write the same site item.
#[tokio::test]
async fn console_and_cli_create_the_same_site() {
    let a = Rig::start().await;
    let b = Harness::start().await;
    let settings = tally_core::ingest::site::SiteChange {
        retention_days: Some(14),
        history_days: Some(0),
        exclude_networks: Some(vec!["203.0.113.9/24".into()]),
        exclude_paths: Some(vec!["/admin/*".into()]),
        ..Default::default()
    };
    let body = json!({
        "domains": ["https://WWW.Shop.example/", "*.shop.example"],
        "timezone": "Europe/Berlin",
        "retention_days": 14,
        "history_days": 0,
        "exclude_networks": ["203.0.113.9/24"],
        "exclude_paths": ["/admin/*"],
    });
    let (status, answer) = a
        .call(Caller::InstanceOwner, None, "POST", "sites", Some(body))
        .await;
    assert_eq!(status, 201, "{answer}");
    let (site, _key) = tally_cli::sites::create_site(
        &b.store,
        None,
        &["https://WWW.Shop.example/".into(), "*.shop.example".into()],
        "Europe/Berlin",
        &settings,
        None,
        START,
    )
    .await
    .unwrap();
    assert_eq!(site.id, "shop.example");
    let by_console = tally_tests::get_item(&a.store, "SITES", "SITE#shop.example").await;
    let by_cli = tally_tests::get_item(&b.store, "SITES", "SITE#shop.example").await;
    assert!(by_console.is_some());
    assert_eq!(by_console, by_cli);
    // A change through each door: the same item again.
    let change = json!({"timezone": "UTC", "exclude_networks": [], "domains": ["shop.example"]});
    let (status, _) = a
        .call(
            Caller::InstanceOwner,
            None,
            "PATCH",
            "sites/shop.example",
            Some(change),
        )
        .await;
    assert_eq!(status, 200);
    let change = tally_core::ingest::site::SiteChange {
        timezone: Some("UTC".into()),
        exclude_networks: Some(vec![]),
        domains: Some(vec!["shop.example".into()]),
        ..Default::default()
    };
    tally_cli::sites::update_site(&b.store, "shop.example", &change)
        .await
        .unwrap();
    assert_eq!(
        tally_tests::get_item(&a.store, "SITES", "SITE#shop.example").await,
        tally_tests::get_item(&b.store, "SITES", "SITE#shop.example").await
    );
}

/// A personal segment is its maker's only: another member neither lists
/// nor removes it; a site-wide segment a live link is locked to is not
/// removed (409) until the link is revoked, and a personal one locks none.
#[tokio::test]
async fn personal_segments_are_their_makers_and_locked_ones_stay() {
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let path = format!("sites/{}/segments", f.site);
    let body = json!({"name": "Mine", "filter": "country==DE", "personal": true});
    let (status, mine) = rig
        .call(Caller::Viewer, Some(&f), "POST", &path, Some(body))
        .await;
    assert_eq!(status, 201, "{mine}");
    let mine_id = mine["id"].as_str().unwrap().to_owned();
    let ids = |list: &Value| -> Vec<String> {
        list["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, seen) = rig.call(Caller::Viewer, Some(&f), "GET", &path, None).await;
    let mut want = vec!["5".to_owned(), mine_id.clone()];
    want.sort();
    assert_eq!(ids(&seen), want, "its maker sees it");
    for other in [Caller::Admin, Caller::Owner, Caller::ReadKey] {
        let (_, list) = rig.call(other, Some(&f), "GET", &path, None).await;
        assert_eq!(ids(&list), ["5"], "{other:?}");
    }
    let (status, _) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{path}/{mine_id}"),
            None,
        )
        .await;
    assert_eq!(
        status, 404,
        "another's personal segment does not exist for an admin"
    );
    let shares = format!("sites/{}/shares", f.site);
    let (status, body) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &shares,
            Some(json!({"segment": mine_id})),
        )
        .await;
    assert_eq!(
        (status, error_code(&body).unwrap_or_default()),
        (400, "personal_segment")
    );
    let (status, link) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &shares,
            Some(json!({"segment": "5"})),
        )
        .await;
    assert_eq!(status, 201, "{link}");
    assert_eq!(link["share"]["segment"], "5");
    let (status, body) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{path}/5"),
            None,
        )
        .await;
    assert_eq!(
        (status, error_code(&body).unwrap_or_default()),
        (409, "segment_in_use")
    );
    let id = link["share"]["id"].as_str().unwrap();
    let (status, _) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{shares}/{id}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{path}/5"),
            None,
        )
        .await;
    assert_eq!(status, 200, "a revoked link holds nothing");
    let (status, _) = rig
        .call(
            Caller::Viewer,
            Some(&f),
            "DELETE",
            &format!("{path}/{mine_id}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "its maker removes it");
}

/// Email report recipients from the console: the item is the one core's
/// `SubscriptionSpec` (the CLI's rule) makes, a second post of an address
/// changes its reports and keeps it once, bad bodies are refused, the
/// audit names the recipient by hash only, and the unsubscribe link the
/// job would mail for it removes what it names.
#[tokio::test]
async fn email_report_recipients_from_the_console() {
    use tally_core::product::report_mail::{Kind, Subscription, sign_unsubscribe};
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let path = format!("sites/{}/email-reports", f.site);
    // The first 8 bytes of SHA-256("ana@example.com"), hex.
    let ana = "8e43ca37701228e7";
    let (status, body) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &path,
            Some(json!({"email": " Ana@Example.COM ", "weekly": true})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body,
        json!({"id": ana, "email": "ana@example.com", "weekly": true, "monthly": false, "created_at": START})
    );
    rig.clock.advance(HOUR_MS);
    let (status, body) = rig
        .call(
            Caller::ConfigureKey,
            Some(&f),
            "POST",
            &path,
            Some(json!({"email": "ana@example.com", "monthly": true})),
        )
        .await;
    assert_eq!(status, 200, "an address listed already: {body}");
    let stored = rig.store.report_subscriptions(&f.site).await.unwrap();
    let want_ana = Subscription {
        email: "ana@example.com".into(),
        weekly: false,
        monthly: true,
        created_at: START,
    };
    assert_eq!(
        stored,
        vec![
            want_ana.clone(),
            Subscription {
                email: "boss@example.com".into(),
                weekly: true,
                monthly: false,
                created_at: START,
            }
        ]
    );
    for (bad, code) in [
        (json!({"email": "nobody", "weekly": true}), "invalid_email"),
        (json!({"email": "x@example.com"}), "invalid_report"),
    ] {
        let (status, body) = rig
            .call(Caller::Owner, Some(&f), "POST", &path, Some(bad))
            .await;
        assert_eq!((status, error_code(&body).unwrap_or_default()), (400, code));
    }
    let (status, list) = rig.call(Caller::Owner, Some(&f), "GET", &path, None).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ana, "f632a98a3d7ca8bd"]);
    let (entries, _) = rig
        .store
        .audit(&AuditLog::Site(f.site.clone()), 10, None)
        .await
        .unwrap();
    let mine: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e.target.starts_with("email-report:"))
        .map(|e| (e.target.as_str(), e.detail.as_str()))
        .collect();
    let target = format!("email-report:{ana}");
    assert_eq!(
        mine,
        [
            (target.as_str(), "report recipient changed (monthly)"),
            (target.as_str(), "report recipient added (weekly)"),
        ]
    );
    // The job's link for ana's monthly report leaves her with none.
    let secret = rig.store.report_secret().await.unwrap();
    let t = sign_unsubscribe(&secret, &f.site, Kind::Monthly, "ana@example.com");
    let request = rig.request(
        Caller::Nobody,
        None,
        "GET",
        &format!("unsubscribe?t={t}"),
        None,
    );
    let response = handle(&rig.store, &rig.clock, &rig.config, request).await;
    assert_eq!(response.status(), 200);
    let left = rig.store.report_subscriptions(&f.site).await.unwrap();
    assert!(!left.contains(&want_ana), "{left:?}");
    assert_eq!(left.len(), 1);
    let (status, body) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{path}/{ana}"),
            None,
        )
        .await;
    assert_eq!(
        (status, error_code(&body).unwrap_or_default()),
        (404, "recipient_not_found")
    );
}

/// Caps nobody can exhaust for others (issue 29, item 4): a viewer who
/// fills their personal segments and annotations is refused, while an
/// admin still adds site-wide ones; the owner lists and removes the
/// viewer's items, and removing the viewer removes the rest. Live keys are
/// capped per site, and a user's sessions: the 21st sign-in ends the
/// least recently used.
#[tokio::test]
async fn a_viewer_cannot_fill_the_site_and_their_items_go_with_them() {
    use tally_core::account::caps::MAX_LIVE_KEYS;
    use tally_core::product::annotation::MAX_PERSONAL_ANNOTATIONS;
    use tally_core::product::saved_segment::MAX_PERSONAL_SEGMENTS;
    let rig = Rig::start().await;
    let f = rig.fixture(1).await;
    let viewer = rig.user_of(Caller::Viewer).id.clone();
    let segments = format!("sites/{}/segments", f.site);
    let annotations = format!("sites/{}/annotations", f.site);
    for n in 0..MAX_PERSONAL_SEGMENTS {
        let body = json!({"name": format!("Mine {n}"), "filter": "country==DE", "personal": true});
        let (status, answer) = rig
            .call(Caller::Viewer, Some(&f), "POST", &segments, Some(body))
            .await;
        assert_eq!(status, 201, "{n}: {answer}");
    }
    for n in 0..MAX_PERSONAL_ANNOTATIONS {
        let body = json!({"date": "2026-03-01", "text": format!("note {n}"), "personal": true});
        let (status, answer) = rig
            .call(Caller::Viewer, Some(&f), "POST", &annotations, Some(body))
            .await;
        assert_eq!(status, 201, "{n}: {answer}");
    }
    for (path, body, code) in [
        (
            &segments,
            json!({"name": "One more", "filter": "country==DE", "personal": true}),
            "too_many_personal_segments",
        ),
        (
            &annotations,
            json!({"date": "2026-03-02", "text": "one more", "personal": true}),
            "too_many_personal_annotations",
        ),
    ] {
        let (status, answer) = rig
            .call(Caller::Viewer, Some(&f), "POST", path, Some(body))
            .await;
        assert_eq!((status, error_code(&answer)), (409, Some(code)), "{path}");
    }
    // The admin's site-wide items are not blocked.
    let (status, answer) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &segments,
            Some(json!({"name": "Site-wide", "filter": "country==FR"})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &annotations,
            Some(json!({"date": "2026-03-02", "text": "admin note"})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");

    // The owner sees every member's personal items when asking, and
    // removes one; nobody else may ask.
    let everyone = format!("{segments}?everyone=true");
    let (status, all) = rig
        .call(Caller::Owner, Some(&f), "GET", &everyone, None)
        .await;
    assert_eq!(status, 200);
    let theirs: Vec<String> = all["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["owner"] == json!(viewer))
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(theirs.len(), MAX_PERSONAL_SEGMENTS);
    for other in [Caller::Admin, Caller::Viewer] {
        let (status, _) = rig.call(other, Some(&f), "GET", &everyone, None).await;
        assert_eq!(status, 403, "{other:?}");
    }
    let (status, _) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "DELETE",
            &format!("{segments}/{}", theirs[0]),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let personal_left = |list: Vec<tally_core::product::saved_segment::SavedSegment>| {
        list.iter()
            .filter(|s| s.owner.as_deref() == Some(viewer.as_str()))
            .count()
    };
    assert_eq!(
        personal_left(rig.store.saved_segments(&f.site).await.unwrap()),
        MAX_PERSONAL_SEGMENTS - 1
    );

    // Removing the viewer removes the rest of their items.
    let (status, _) = rig
        .call(
            Caller::Owner,
            Some(&f),
            "DELETE",
            &format!("sites/{}/members/{viewer}", f.site),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        personal_left(rig.store.saved_segments(&f.site).await.unwrap()),
        0
    );
    let notes = rig.store.annotations(&f.site, None).await.unwrap();
    assert!(notes.iter().all(|a| a.owner.is_none()), "{}", notes.len());
    assert_eq!(notes.iter().filter(|a| a.text == "admin note").count(), 1);

    // Live keys: up to the cap, then 409 until one is revoked.
    let keys = format!("sites/{}/keys", f.site);
    let live = rig
        .store
        .api_keys(&f.site)
        .await
        .unwrap()
        .iter()
        .filter(|k| k.revoked_at.is_none())
        .count();
    for n in live..MAX_LIVE_KEYS {
        let (status, answer) = rig
            .call(Caller::Admin, Some(&f), "POST", &keys, Some(json!({})))
            .await;
        assert_eq!(status, 201, "{n}: {answer}");
    }
    let (status, answer) = rig
        .call(Caller::Admin, Some(&f), "POST", &keys, Some(json!({})))
        .await;
    assert_eq!((status, error_code(&answer)), (409, Some("too_many_keys")));
    let (status, _) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "DELETE",
            &format!("{keys}/{}", f.admin_key_id),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, answer) = rig
        .call(Caller::Admin, Some(&f), "POST", &keys, Some(json!({})))
        .await;
    assert_eq!(status, 201, "{answer}");

    // Live links and affiliates: at the cap, one more is 409 and nothing
    // is stored.
    use tally_core::account::caps::{MAX_AFFILIATES, MAX_LIVE_LINKS};
    let live_links = |shares: Vec<tally_core::account::share::Share>| {
        shares.iter().filter(|s| s.live(START)).count()
    };
    let mut seed = 100u8;
    while live_links(rig.store.shares(&f.site).await.unwrap()) < MAX_LIVE_LINKS {
        tally_tests::new_share(&rig.store, &f.site, seed).await;
        seed += 1;
    }
    let shares = format!("sites/{}/shares", f.site);
    let (status, answer) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &shares,
            Some(json!({"label": "x"})),
        )
        .await;
    assert_eq!((status, error_code(&answer)), (409, Some("too_many_links")));
    assert_eq!(
        live_links(rig.store.shares(&f.site).await.unwrap()),
        MAX_LIVE_LINKS
    );
    let held = rig.store.affiliates(&f.site).await.unwrap().len();
    for n in held..MAX_AFFILIATES {
        let affiliate = tally_core::product::conversion::AffiliateSpec {
            slug: format!("a{n}"),
            rate: Some("0.1".into()),
            fixed: None,
            currency: "EUR".into(),
        }
        .build(START)
        .unwrap();
        assert!(
            rig.store
                .create_affiliate(&f.site, &affiliate)
                .await
                .unwrap()
        );
    }
    let (status, answer) = rig
        .call(
            Caller::Admin,
            Some(&f),
            "POST",
            &format!("sites/{}/affiliates", f.site),
            Some(json!({"slug": "one-more", "rate": "0.1", "currency": "EUR"})),
        )
        .await;
    assert_eq!(
        (status, error_code(&answer)),
        (409, Some("too_many_affiliates"))
    );
    assert_eq!(
        rig.store.affiliates(&f.site).await.unwrap().len(),
        MAX_AFFILIATES
    );
}
