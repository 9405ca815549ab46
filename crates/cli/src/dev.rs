//! `tally dev`: the whole stack on this machine, nothing to install.
//!
//! An embedded `dynoxide` server (DynamoDB's wire protocol over SQLite) runs
//! on loopback, backed by a file in the data directory; the table is created
//! from the same spec as `template.yaml`; a demo site for `localhost` gets an
//! API key; and one HTTP server routes requests to the real ingest and query
//! handlers (`/api/console/…` to the console, `/` and the rest of `/api/…`
//! to query, except `/api/event`; everything else to ingest), which reach
//! the store through `aws-sdk-dynamodb`. On first start a demo instance
//! owner, `demo@localhost`, is made owner of the demo site; its random
//! password is kept in the data directory and printed on the ready line.
//!
//! Mail the stack would send (invites, password resets) is written to
//! `{data_dir}/outbox/` and listed at `/dev/outbox` (`dev::outbox`).

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use anyhow::Context;
use axum::extract::{ConnectInfo, Request as AxumRequest, State};
use axum::response::Response as AxumResponse;
use clap::Args;
use lambda_http::request::RequestContext;
use lambda_http::{Body, RequestExt};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tally_core::ingest::site::Site;
use tally_ingest::Config as IngestConfig;
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::SystemClock;
use tally_store::salt::SharedSalt;
use tally_store::table::ensure_table;
use tally_store::{ClientOptions, Store};

mod outbox;

/// The demo site's id.
pub const DEMO_SITE: &str = "demo";
const DEMO_PAGE: &str = include_str!("../assets/demo.html");
/// Largest request body `tally dev` reads (the handlers enforce their own
/// smaller limits and answer with JSON errors).
const MAX_DEV_BODY: usize = 2 * 1024 * 1024;
/// Log directives of `tally dev` (unless `RUST_LOG` is set): the embedded
/// server logs every error answer at WARN, also those that are normal work
/// (the first start's `DescribeTable` of a table not made yet, a duplicate
/// event's failed condition); the handlers log the failures that matter.
const DEV_LOG_DIRECTIVES: &str = "dynoxide::server=error";

/// `tally dev` options.
#[derive(Args, Debug, Clone)]
pub struct DevArgs {
    /// HTTP port of the ingest and query routes (0 picks a free one).
    #[arg(long, env = "TALLY_PORT", default_value_t = 8787)]
    port: u16,
    /// Port of the embedded DynamoDB endpoint (0 picks a free one).
    #[arg(long, env = "TALLY_DYNAMODB_PORT", default_value_t = 8000)]
    dynamodb_port: u16,
    /// Where the embedded store keeps its SQLite file and the demo key.
    #[arg(long, env = "TALLY_DATA_DIR", default_value = ".tally")]
    data_dir: PathBuf,
    /// Use this DynamoDB-compatible endpoint instead of the embedded one.
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    dynamodb_endpoint: Option<String>,
    /// The table name.
    #[arg(long, env = "TABLE_NAME", default_value = "tally")]
    table: String,
    /// Keep the embedded store in memory (nothing survives a restart).
    #[arg(long)]
    memory: bool,
    /// Make no demo console owner: the console's first run stays to be
    /// done with a token from `tally setup-token`.
    #[arg(long)]
    no_demo_owner: bool,
}

struct App {
    ingest: DynamoIngest,
    ingest_config: IngestConfig,
    query: DynamoQuery,
    query_config: tally_query::Config,
    console: Store,
    console_config: tally_console::Config,
}

/// Runs the stack until Ctrl-C.
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    tally_lambda::logging::init_tracing_with(DEV_LOG_DIRECTIVES);
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);

    let endpoint = match &args.dynamodb_endpoint {
        Some(endpoint) => endpoint.clone(),
        None => {
            let db = if args.memory {
                dynoxide::Database::memory()
            } else {
                let path = args.data_dir.join("tally.db");
                dynoxide::Database::new(&path.to_string_lossy())
            }
            .map_err(|e| anyhow::anyhow!("opening the embedded store: {e}"))?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.dynamodb_port))
                .await
                .with_context(|| format!("binding the DynamoDB port {}", args.dynamodb_port))?;
            let addr = listener.local_addr()?;
            let mut rx = shutdown_rx.clone();
            tokio::spawn(async move {
                let stop = async move {
                    let _ = rx.changed().await;
                };
                if let Err(e) = dynoxide::server::serve_with_shutdown(listener, db, stop).await {
                    tracing::error!(error = %e, "embedded store stopped");
                }
            });
            format!("http://{addr}")
        }
    };

    let store = Store::connect(&ClientOptions::local(&endpoint), &args.table).await;
    ensure_table(store.client(), &args.table)
        .await
        .context("creating the table")?;
    let secret = dev_secret(&args.data_dir)?;
    // Keys, links and sessions are tagged as the deployed functions tag them.
    let tag_key = tally_core::account::tag::TagKey::derive(&secret);
    let key = ensure_demo(&store, &args.data_dir, &tag_key).await?;
    let login = if args.no_demo_owner {
        None
    } else {
        ensure_demo_owner(&store, &args.data_dir).await?
    };

    // Invitations go to the outbox `/dev/outbox` lists; alert webhooks may
    // be plain http to this machine (as `tally alert set --allow-local`).
    let console_config = tally_console::Config::new(&secret)
        .with_mailer(tally_mail::Outbox::in_data_dir(&args.data_dir))
        .allowing_local_urls();
    let app = Arc::new(App {
        ingest: DynamoIngest::new(store.clone(), SharedSalt::new()),
        // Metric lines are for CloudWatch; `tally dev` keeps stdout for its
        // ready line and the counters at /health. Every bot signal is on
        // (`from_env`), and the bots-blocked counts are written at once
        // (the deployed function batches them a minute to save writes; a
        // local table has none to save), so the dashboard's card shows a
        // dropped bot on its next load.
        ingest_config: IngestConfig {
            emit_metrics: false,
            bots_flush_ms: 0,
            ..IngestConfig::from_env()
        },
        query: DynamoQuery::new(store.clone()),
        query_config: tally_query::Config {
            tag_keys: Some(tally_core::account::tag::TagKeys::new(tag_key)),
            ..tally_query::Config::default()
        },
        console: store.clone(),
        console_config,
    });
    let router = axum::Router::new()
        .fallback(route)
        .with_state(app)
        .merge(outbox::router(tally_mail::Outbox::in_data_dir(
            &args.data_dir,
        )));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("binding the HTTP port {}", args.port))?;
    let http = listener.local_addr()?;
    let mut rx = shutdown_rx.clone();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async move {
            let _ = rx.changed().await;
        })
        .await
    });

    // The scheduled job on AWS's schedule: at start, then at 20 past every
    // hour (when the hour before is sealed): compaction, then rollups.
    let rollup_store =
        Store::connect(&ClientOptions::local(&endpoint).for_batch(), &args.table).await;
    let mut rollup_stop = shutdown_rx.clone();
    let report_outbox = tally_mail::Outbox::in_data_dir(&args.data_dir);
    let report_url = format!("http://{http}");
    tokio::spawn(async move {
        loop {
            let now = crate::admin::now_ms();
            match tally_rollup::run(
                &rollup_store,
                now,
                &tally_rollup::JobConfig::default(),
                &no_progress,
            )
            .await
            {
                Ok(report) => tracing::info!(
                    days_written = report.days_written,
                    hours_compacted = report.compaction.hours_added,
                    days_packed = report.compaction.days_packed,
                    "scheduled job run"
                ),
                Err(e) => tracing::warn!(error = %e, "scheduled job run failed"),
            }
            // Step 3: email reports due, into the outbox `/dev/outbox` lists.
            let job = tally_rollup::reports::ReportJob {
                mailer: &report_outbox,
                public_url: report_url.clone(),
                site: None,
            };
            if let Err(e) =
                tally_rollup::reports::send_due(&rollup_store, crate::admin::now_ms(), &job).await
            {
                tracing::warn!(error = %e, "email reports failed");
            }
            // Step 4: traffic alerts, their mail into the same outbox.
            match tally_rollup::webhook::Webhooks::new(true) {
                Ok(webhooks) => {
                    let job = tally_rollup::alerts::AlertJob {
                        mailer: Some(&report_outbox),
                        poster: &webhooks,
                        public_url: &report_url,
                        site: None,
                    };
                    if let Err(e) =
                        tally_rollup::alerts::run_due(&rollup_store, crate::admin::now_ms(), &job)
                            .await
                    {
                        tracing::warn!(error = %e, "traffic alerts failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "traffic alerts are off"),
            }
            let wait = tally_rollup::until_next_run(crate::admin::now_ms());
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
                _ = rollup_stop.changed() => break,
            }
        }
    });

    // Written with `writeln!`, not `println!`: a script that reads the ready
    // line and closes the pipe must not kill the server.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        // Scripts read `key=value` pairs (e2e/harness.mjs): the demo
        // login is two more, when the demo owner is this instance's.
        let login = login
            .map(|password| format!(" login={DEMO_OWNER} password={password}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "ready: http=http://{http} dynamodb={endpoint} table={} site={DEMO_SITE} key={key}{login}",
            args.table
        );
        let _ = writeln!(
            out,
            "demo page: http://{http}/demo   dashboard: http://{http}/   outbox: http://{http}{}",
            outbox::PATH
        );
        let _ = out.flush();
    }
    tokio::signal::ctrl_c().await.ok();
    let _ = shutdown_tx.send(true);
    let _ = server.await;
    Ok(())
}

/// Creates the demo site and its key on first start; the key is kept in the
/// data directory so later starts can print it again.
/// The salt secret: `TALLY_SALT_SECRET` when set, else one kept in the data
/// dir (`salt-secret`, made once from the system's randomness), so visitor
/// ids and console sessions survive a restart and a first run has nothing
/// to warn about.
fn dev_secret(data_dir: &Path) -> anyhow::Result<tally_core::ingest::salt::Secret> {
    if std::env::var("TALLY_SALT_SECRET").is_ok_and(|v| !v.is_empty()) {
        return Ok(tally_store::env::salt_secret()?);
    }
    let file = data_dir.join("salt-secret");
    let value = match std::fs::read_to_string(&file) {
        Ok(v) if !v.trim().is_empty() => v.trim().to_owned(),
        _ => {
            let mut bytes = [0u8; 32];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
                .map_err(|_| anyhow::anyhow!("no system randomness for the salt secret"))?;
            let v: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::write(&file, &v).with_context(|| format!("writing {}", file.display()))?;
            v
        }
    };
    Ok(tally_store::env::secret_from(Some(value), false)?)
}

async fn ensure_demo(
    store: &Store,
    data_dir: &Path,
    tag_key: &tally_core::account::tag::TagKey,
) -> anyhow::Result<String> {
    if store.site(DEMO_SITE).await?.is_none() {
        let site = Site::new(
            DEMO_SITE,
            &["localhost".to_owned(), "127.0.0.1".to_owned()],
            "UTC",
            crate::admin::now_ms(),
        )?;
        store.create_site(&site).await?;
    }
    let key_file = data_dir.join("demo-key");
    if let Ok(key) = std::fs::read_to_string(&key_file) {
        let key = key.trim().to_owned();
        let hash = tally_core::account::auth::hash_key(&key);
        if store
            .api_key(DEMO_SITE, &hash)
            .await?
            .is_some_and(|k| k.revoked_at.is_none())
        {
            return Ok(key);
        }
    }
    let key = tally_cli::sites::create_key(
        store,
        DEMO_SITE,
        "tally dev",
        Some(tag_key),
        crate::admin::now_ms(),
    )
    .await?;
    std::fs::write(&key_file, &key).with_context(|| format!("writing {}", key_file.display()))?;
    Ok(key)
}

/// The demo instance owner's email.
pub const DEMO_OWNER: &str = "demo@localhost";

/// Creates the demo instance owner on first start (when the instance has
/// no owner), owner of the demo site, with a random password kept in the
/// data directory: the password, or `None` when the instance's owner is
/// someone else (set up by hand).
async fn ensure_demo_owner(store: &Store, data_dir: &Path) -> anyhow::Result<Option<String>> {
    let file = data_dir.join("demo-login");
    let owner = store.instance_owner().await?;
    if let Some(owner) = owner {
        let demo = store.user_by_email(DEMO_OWNER).await?;
        let saved = std::fs::read_to_string(&file).ok();
        return Ok(match (demo, saved) {
            (Some(demo), Some(password)) if demo.id == owner => Some(password.trim().to_owned()),
            _ => None,
        });
    }
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 12];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no randomness available"))?;
    let password = tally_core::hex::encode(&bytes);
    let user =
        crate::accounts::create_user(store, DEMO_OWNER, &password, true, crate::admin::now_ms())
            .await?;
    crate::accounts::add_member(store, DEMO_SITE, &user, tally_core::account::Role::Owner).await?;
    std::fs::write(&file, &password).with_context(|| format!("writing {}", file.display()))?;
    Ok(Some(password))
}

async fn route(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: AxumRequest,
) -> AxumResponse {
    let path = request.uri().path().to_owned();
    if path == "/demo" || path.starts_with("/demo/") {
        return demo_page();
    }
    if let Some(page) = dev_asset(&path) {
        return page;
    }
    let request = match to_lambda(request, peer).await {
        Ok(r) => r,
        Err(response) => return *response,
    };
    // As the HTTP API routes them: `/console` and `/api/console/` are the
    // console's, `/api/event` (Plausible's Events API) is ingest's, the rest
    // of `/api/` and the dashboard are query's.
    if path.starts_with(tally_console::PREFIX) || path == tally_console::page::PATH {
        let response =
            tally_console::handle(&app.console, &SystemClock, &app.console_config, request).await;
        return from_lambda(response);
    }
    let to_query = path == "/" || path == "/dashboard" || path.starts_with("/api/");
    let response = if to_query && path.trim_end_matches('/') != "/api/event" {
        tally_query::handle_with(&app.query, &SystemClock, &app.query_config, request).await
    } else {
        tally_ingest::handle(&app.ingest, &SystemClock, &app.ingest_config, request).await
    };
    from_lambda(response)
}

fn no_progress(_site: &str) {}

/// With `TALLY_DEV_ASSETS=crates/query/assets`, the dashboard is read from
/// disk on every request, so it can be edited without rebuilding.
fn dev_asset(path: &str) -> Option<AxumResponse> {
    let dir = std::env::var("TALLY_DEV_ASSETS").ok()?;
    if path != "/" && path != "/dashboard" {
        return None;
    }
    let html = std::fs::read_to_string(std::path::Path::new(&dir).join("dashboard.html")).ok()?;
    Some(from_lambda(tally_query::dashboard_response(html)))
}

fn demo_page() -> AxumResponse {
    let html = DEMO_PAGE.replace("{{SITE}}", DEMO_SITE);
    let mut response = AxumResponse::new(axum::body::Body::from(html));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// Turns an axum request into the `lambda_http` request API Gateway would
/// deliver, with the peer address as the source IP.
async fn to_lambda(
    request: AxumRequest,
    peer: SocketAddr,
) -> Result<lambda_http::Request, Box<AxumResponse>> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_DEV_BODY)
        .await
        .map_err(|_| {
            let mut r = AxumResponse::new(axum::body::Body::from(
                r#"{"error":{"code":"body_too_large","message":"request body is too large"}}"#,
            ));
            *r.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            Box::new(r)
        })?;
    let body = if bytes.is_empty() {
        Body::Empty
    } else {
        match String::from_utf8(bytes.to_vec()) {
            Ok(text) => Body::Text(text),
            Err(e) => Body::Binary(e.into_bytes()),
        }
    };
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.method = parts.method.clone();
    context.http.path = Some(parts.uri.path().to_owned());
    context.http.source_ip = Some(peer.ip().to_string());
    let request = http::Request::from_parts(parts, body)
        .with_request_context(RequestContext::ApiGatewayV2(context));
    Ok(request)
}

fn from_lambda(response: lambda_http::Response<Body>) -> AxumResponse {
    let (parts, body) = response.into_parts();
    let body = match body {
        Body::Empty => axum::body::Body::empty(),
        Body::Text(text) => axum::body::Body::from(text),
        Body::Binary(bytes) => axum::body::Body::from(bytes),
        _ => axum::body::Body::empty(),
    };
    AxumResponse::from_parts(parts, body)
}
