//! `GET /dev/outbox` (an HTML page) and `GET /dev/outbox.json`: the mail
//! `tally dev` wrote to `{data_dir}/outbox/` instead of sending it, newest
//! first; `GET /dev/outbox/{id}`: a message's HTML part as a mail client
//! shows it (sandboxed: no script, nothing loaded). Served by `tally dev`
//! only, never by a Lambda.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;
use tally_mail::{Outbox, StoredMessage};

/// The page's path.
pub const PATH: &str = "/dev/outbox";

/// The routes, over the data directory's outbox.
pub fn router(outbox: Outbox) -> axum::Router {
    axum::Router::new()
        .route(PATH, axum::routing::get(page))
        .route("/dev/outbox.json", axum::routing::get(json))
        .route("/dev/outbox/{id}", axum::routing::get(html_part))
        .with_state(Arc::new(outbox))
}

/// `GET /dev/outbox.json`'s body.
#[derive(Serialize)]
struct Listing {
    /// Newest first.
    messages: Vec<StoredMessage>,
}

/// The outbox's messages, or the 500 answered when it cannot be read.
fn list(outbox: &Outbox) -> Result<Vec<StoredMessage>, Box<Response>> {
    outbox.list().map_err(|e| {
        tracing::warn!(error = %e, "reading the outbox");
        let mut r = "the outbox could not be read".into_response();
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        Box::new(r)
    })
}

/// Mail links carry tokens: no caching, no referrer.
fn private(mut response: Response, content_type: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn json(State(outbox): State<Arc<Outbox>>) -> Response {
    let messages = match list(&outbox) {
        Ok(m) => m,
        Err(r) => return *r,
    };
    let body = serde_json::to_string(&Listing { messages }).unwrap_or_default();
    private(body.into_response(), "application/json")
}

/// A message's HTML part, under a policy a mail client's would match: no
/// script, no request (the report's chart is table cells), inline styles.
async fn html_part(State(outbox): State<Arc<Outbox>>, Path(id): Path<String>) -> Response {
    let html = match outbox.read(&id) {
        Ok(Some(m)) => m.message.html,
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = %e, "reading the outbox");
            None
        }
    };
    let Some(html) = html else {
        let mut r = "no such message with an HTML part".into_response();
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    };
    let mut response = private(html.into_response(), "text/html; charset=utf-8");
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:",
        ),
    );
    response
}

async fn page(State(outbox): State<Arc<Outbox>>) -> Response {
    let messages = match list(&outbox) {
        Ok(m) => m,
        Err(r) => return *r,
    };
    private(
        render(&messages, &outbox.dir().display().to_string()).into_response(),
        "text/html; charset=utf-8",
    )
}

/// The HTML page: each message's time, recipient, subject and text, links
/// in the text clickable, and a link to the HTML part when there is one.
fn render(messages: &[StoredMessage], dir: &str) -> String {
    let mut html = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>Outbox · tally dev</title><style>\
         body{font:15px/1.45 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}\
         article{border:1px solid #ddd;border-radius:6px;padding:.75rem 1rem;margin:1rem 0}\
         dl{display:grid;grid-template-columns:6rem 1fr;gap:.15rem .5rem;margin:0 0 .5rem}\
         dt{color:#666}dd{margin:0}\
         pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.6rem;border-radius:4px;margin:0}\
         </style></head><body><h1>Outbox</h1>",
    );
    html.push_str(&format!(
        "<p>Mail <code>tally dev</code> would have sent, newest first, from <code>{}</code> \
         (<a href=\"/dev/outbox.json\">JSON</a>).</p>",
        escape(dir)
    ));
    if messages.is_empty() {
        html.push_str("<p>No mail yet.</p>");
    }
    for m in messages {
        html.push_str(&format!(
            "<article id=\"{id}\"><dl><dt>sent</dt><dd>{sent}</dd><dt>to</dt><dd>{to}</dd>\
             <dt>subject</dt><dd>{subject}</dd>{html}</dl><pre>{text}</pre></article>",
            id = escape(&m.id),
            html = if m.message.html.is_some() {
                format!(
                    "<dt>HTML</dt><dd><a href=\"{PATH}/{id}\" data-testid=\"html-part\">as a mail client shows it</a></dd>",
                    id = escape(&m.id)
                )
            } else {
                String::new()
            },
            sent = escape(&sent_at(m.sent_at)),
            to = escape(&m.message.to),
            subject = escape(&m.message.subject),
            text = linkify(&m.message.text),
        ));
    }
    html.push_str("</body></html>");
    html
}

fn sent_at(ms: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .ok()
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// HTML-escapes text for an element or a quoted attribute (core's rule,
/// the report mail's too).
use tally_core::product::report_mail::render::escape_html as escape;

/// Escapes `text`, making each `http://` or `https://` word a link.
fn linkify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let start = match (rest.find("http://"), rest.find("https://")) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => {
                out.push_str(&escape(rest));
                break;
            }
        };
        out.push_str(&escape(&rest[..start]));
        let url_len = rest[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"'))
            .unwrap_or(rest.len() - start);
        let url = &rest[start..start + url_len];
        let url = escape(url);
        out.push_str(&format!("<a href=\"{url}\">{url}</a>"));
        rest = &rest[start + url_len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_mail::Message;

    #[test]
    fn a_message_with_an_html_part_links_to_it_and_one_without_does_not() {
        let plain = StoredMessage {
            id: "20260105T123000.000Z-0".into(),
            sent_at: 1_767_616_200_000,
            message: Message::new("a@example.org", "plain", "text"),
        };
        let mut rich = plain.clone();
        rich.id = "20260105T123000.000Z-1".into();
        rich.message = rich.message.with_html("<p>hi</p>");
        let html = render(&[rich], "/tmp/.tally/outbox");
        assert!(html.contains("href=\"/dev/outbox/20260105T123000.000Z-1\""));
        assert!(!html.contains("<p>hi</p>"));
        let html = render(&[plain], "/tmp/.tally/outbox");
        assert!(!html.contains("data-testid=\"html-part\""));
    }

    #[test]
    fn the_page_escapes_every_field_and_links_urls() {
        let messages = vec![StoredMessage {
            id: "20260105T123000.000Z-0".into(),
            sent_at: 1_767_616_200_000,
            message: Message::new(
                "ada<x>@example.org",
                "Invite to \"demo\" & more",
                "Accept: http://localhost:8787/#invite=ti_1.demo\n<script>alert(1)</script>",
            ),
        }];
        let html = render(&messages, "/tmp/.tally/outbox");
        assert!(html.contains("ada&lt;x&gt;@example.org"));
        assert!(html.contains("Invite to &quot;demo&quot; &amp; more"));
        assert!(html.contains(
            "<a href=\"http://localhost:8787/#invite=ti_1.demo\">http://localhost:8787/#invite=ti_1.demo</a>"
        ));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script>"));
        assert!(html.contains("2026-01-05 12:30:00 UTC"));
        assert!(render(&[], "d").contains("No mail yet."));
    }

    #[test]
    fn links_end_at_whitespace_and_text_around_them_is_kept() {
        assert_eq!(linkify("no links"), "no links");
        assert_eq!(
            linkify("a https://x.test/?a=1&b=2 b"),
            "a <a href=\"https://x.test/?a=1&amp;b=2\">https://x.test/?a=1&amp;b=2</a> b"
        );
        assert_eq!(
            linkify("http://a\thttp://b"),
            "<a href=\"http://a\">http://a</a>\t<a href=\"http://b\">http://b</a>"
        );
    }
}
