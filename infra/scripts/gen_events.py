#!/usr/bin/env python3
"""Regenerate the event fixtures in infra/events/.

Usage (from the repository root):

    python3 infra/scripts/gen_events.py            # writes infra/events/*.json
    python3 infra/scripts/gen_events.py --check    # exit 1 if a file differs

The fixtures are what API Gateway (HTTP API, payload format 2.0) and an
EventBridge rule deliver to the functions, so `sam local invoke -e` accepts
them and the Rust tests can feed the same files to the handlers
(`lambda_http::request::from_str`, `serde_json::from_str::<EventBridgeEvent<_>>`).

Everything is deterministic: fixed clock, fixed ids. Addresses are from the
documentation ranges (RFC 5737 / RFC 3849). Tracker bodies are built exactly
as the tracker builds them (crates/ingest/assets/script.js): the `eid` is 12
random characters followed by the client clock `ts` in base 36, and `body`
is the JSON text as a string.
"""

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

EVENTS = Path(__file__).resolve().parent.parent / "events"

ACCOUNT = "123456789012"
REGION = "us-east-1"
API_ID = "a1b2c3d4e5"
DOMAIN = f"{API_ID}.execute-api.{REGION}.amazonaws.com"

# The page view's client clock: 2025-11-30T00:00:00Z.
T0 = 1764460800000
SITE = "example.com"
SID = "k3j4h5g6f7d8"
PAGE = "https://example.com/blog/hello?utm_source=newsletter&utm_medium=email"
API_KEY = "tk_0123456789abcdef0123456789abcdef01234567.example.com"

CHROME = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36"
)
CHROME_CH = {
    "sec-ch-ua": '"Chromium";v="142", "Google Chrome";v="142", "Not_A Brand";v="99"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"macOS"',
}
FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:145.0) Gecko/20100101 Firefox/145.0"
SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_6 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/26.0 Mobile/15E148 Safari/604.1"
)
GOOGLEBOT = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/142.0.7444.175 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
CURL = "curl/8.11.1"


def base36(n: int) -> str:
    """JavaScript's `n.toString(36)` for a non-negative integer."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def eid(random12: str, ts: int) -> str:
    assert len(random12) == 12
    return random12 + base36(ts)


def tracker_body(e: str, p: dict, ts: int, random12: str, **over) -> str:
    """The JSON text the tracker posts, key order as in the tracker."""
    body = {
        "s": SITE,
        "sid": SID,
        "e": e,
        "p": p,
        "u": PAGE,
        "r": "https://www.google.com/",
        "t": "Hello",
        "sw": 1440,
        "sh": 900,
        "tz": "Europe/Berlin",
        "eid": eid(random12, ts),
        "ts": ts,
    }
    body.update(over)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def clf_time(ms: int) -> str:
    """requestContext.time: `30/Nov/2025:00:00:00 +0000`."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")


def http_event(
    method,
    path,
    *,
    route,
    at,
    request_id,
    ip,
    ua,
    query=None,
    headers=None,
    body=None,
    path_parameters=None,
):
    """An API Gateway HTTP API payload format 2.0 event."""
    raw_query = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    h = {
        "accept": "*/*",
        "accept-encoding": "gzip, deflate, br, zstd",
        "accept-language": "en-US,en;q=0.9",
    }
    if body is not None:
        h["content-length"] = str(len(body.encode("utf-8")))
    h.update(headers or {})
    h.update(
        {
            "host": DOMAIN,
            "user-agent": ua,
            "x-amzn-trace-id": f"Root=1-{at // 1000:08x}-{request_id.encode().hex()[:24]}",
            "x-forwarded-for": ip,
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
        }
    )
    event = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": dict(sorted(h.items())),
    }
    if query:
        event["queryStringParameters"] = dict(query)
    event["requestContext"] = {
        "accountId": ACCOUNT,
        "apiId": API_ID,
        "domainName": DOMAIN,
        "domainPrefix": API_ID,
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": ip,
            "userAgent": ua,
        },
        "requestId": request_id,
        "routeKey": route,
        "stage": "$default",
        "time": clf_time(at),
        "timeEpoch": at,
    }
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body is not None:
        event["body"] = body
    event["isBase64Encoded"] = False
    return event


def beacon_headers(ua_hints=None):
    """What navigator.sendBeacon sends cross-origin with a text/plain Blob."""
    h = {
        "content-type": "text/plain",
        "origin": "https://example.com",
        "referer": "https://example.com/",
        "sec-fetch-dest": "empty",
        "sec-fetch-mode": "no-cors",
        "sec-fetch-site": "cross-site",
    }
    h.update(ua_hints or {})
    return h


def collect(name, body, *, ts, request_id, ip="203.0.113.42", ua=CHROME, hints=CHROME_CH):
    at = ts + 187  # the request reaches API Gateway a moment after the click
    return name, http_event(
        "POST",
        "/collect",
        route="POST /collect",
        at=at,
        request_id=request_id,
        ip=ip,
        ua=ua,
        headers=beacon_headers(hints),
        body=body,
    )


def query(name, proxy, q, *, request_id, authorized=True, ip="198.51.100.77", ua=FIREFOX):
    headers = {"accept": "application/json", "referer": f"https://{DOMAIN}/"}
    if authorized:
        headers["authorization"] = f"Bearer {API_KEY}"
    return name, http_event(
        "GET",
        f"/api/{proxy}",
        route="GET /api/{proxy+}",
        at=T0 + 3_600_000,
        request_id=request_id,
        ip=ip,
        ua=ua,
        query=q,
        headers=headers,
        path_parameters={"proxy": proxy},
    )


def fixtures():
    ts_event, ts_outbound, ts_engagement = T0 + 21_450, T0 + 35_120, T0 + 42_730
    yield collect(
        "ingest-pageview.json",
        tracker_body("pageview", {}, T0, "a1b2c3d4e5f6"),
        ts=T0,
        request_id="Q3kT5hX2IAMEbjw=",
    )
    yield collect(
        "ingest-event.json",
        tracker_body(
            "event",
            {"name": "Signup", "value": 10, "props": {"plan": "pro"}},
            ts_event,
            "q7w8e9r0t1y2",
        ),
        ts=ts_event,
        request_id="Q3kUAjH9IAMEbnQ=",
    )
    yield collect(
        "ingest-outbound.json",
        tracker_body(
            "click", {"url": "https://github.com/tally", "kind": "outbound"}, ts_outbound, "z9x8c7v6b5n4"
        ),
        ts=ts_outbound,
        request_id="Q3kWFhR4IAMEbqA=",
    )
    yield collect(
        "ingest-engagement.json",
        tracker_body(
            "engagement", {"timeOnPage": 42, "scrollDepth": 80}, ts_engagement, "p0o9i8u7y6t5"
        ),
        ts=ts_engagement,
        request_id="Q3kXNg7mIAMEbsw=",
    )
    yield "ingest-preflight.json", http_event(
        "OPTIONS",
        "/collect",
        route="OPTIONS /collect",
        at=T0 + 95,
        request_id="Q3kT5gYrIAMEbiQ=",
        ip="198.51.100.23",
        ua=FIREFOX,
        headers={
            "access-control-request-headers": "content-type",
            "access-control-request-method": "POST",
            "origin": "https://example.com",
            "referer": "https://example.com/",
            "sec-fetch-dest": "empty",
            "sec-fetch-mode": "cors",
            "sec-fetch-site": "cross-site",
        },
    )
    yield collect(
        "ingest-bad-body.json",
        '{"s":"example.com","u":',
        ts=T0 + 61_000,
        request_id="Q3kZ2jLxIAMEbvw=",
        ip="2001:db8::7",
        ua=SAFARI,
        hints={},
    )
    yield collect(
        "ingest-bot.json",
        tracker_body(
            "pageview", {}, T0 + 90_000, "b07b07b07b07", sid="m2n3b4v5c6x7", r="", sw=412, sh=732, tz="UTC"
        ),
        ts=T0 + 90_000,
        request_id="Q3kb9hW1IAMEbzg=",
        ip="198.51.100.66",
        ua=GOOGLEBOT,
        hints={},
    )
    # Plausible's tracker (0.4.6, recorded in Chromium): fetch with
    # keepalive, a text/plain JSON body, to /api/event.
    yield "ingest-plausible-event.json", http_event(
        "POST",
        "/api/event",
        route="POST /api/event",
        at=T0 + 50_210,
        request_id="Q3kVb2mPIAMEbsA=",
        ip="203.0.113.42",
        ua=CHROME,
        headers={
            "content-type": "text/plain",
            "origin": "https://example.com",
            "referer": "https://example.com/",
            "sec-fetch-dest": "empty",
            "sec-fetch-mode": "cors",
            "sec-fetch-site": "cross-site",
            **CHROME_CH,
        },
        body=json.dumps(
            {
                "n": "Signup",
                "v": 36,
                "u": PAGE,
                "d": SITE,
                "r": None,
                "p": {"plan": "pro"},
                "$": {"amount": 49, "currency": "EUR"},
            },
            separators=(",", ":"),
        ),
    )
    yield "ingest-plausible-script.json", http_event(
        "GET",
        "/js/script.outbound-links.file-downloads.js",
        route="GET /js/{script}",
        at=T0 - 650,
        request_id="Q3kT3kLmIAMEbhQ=",
        ip="203.0.113.42",
        ua=CHROME,
        headers={
            "referer": "https://example.com/",
            "sec-fetch-dest": "script",
            "sec-fetch-mode": "no-cors",
            "sec-fetch-site": "cross-site",
            **CHROME_CH,
        },
        path_parameters={"script": "script.outbound-links.file-downloads.js"},
    )
    yield "ingest-script.json", http_event(
        "GET",
        "/script.js",
        route="GET /script.js",
        at=T0 - 640,
        request_id="Q3kT3jKdIAMEbgg=",
        ip="203.0.113.42",
        ua=CHROME,
        headers={
            "referer": "https://example.com/",
            "sec-fetch-dest": "script",
            "sec-fetch-mode": "no-cors",
            "sec-fetch-site": "cross-site",
            **CHROME_CH,
        },
    )
    yield "ingest-health.json", http_event(
        "GET",
        "/health",
        route="GET /health",
        at=T0 + 300_000,
        request_id="Q3kkLhU3IAMEb4A=",
        ip="198.51.100.10",
        ua=CURL,
    )
    yield query(
        "query-stats.json",
        "sites/example.com/stats",
        {"period": "7d", "compare": "previous"},
        request_id="Q3rA1jQ4IAMEcAg=",
    )
    yield query(
        "query-timeseries.json",
        "sites/example.com/timeseries",
        {"period": "30d", "interval": "day"},
        request_id="Q3rA1kB7IAMEcBA=",
    )
    yield query(
        "query-breakdown.json",
        "sites/example.com/breakdown/pages",
        {"period": "30d", "limit": "10"},
        request_id="Q3rA1kC2IAMEcCQ=",
    )
    yield query(
        "query-realtime.json",
        "sites/example.com/realtime",
        None,
        request_id="Q3rA1kD9IAMEcDg=",
    )
    yield query(
        "query-unauthorized.json",
        "sites/example.com/stats",
        {"period": "7d", "compare": "previous"},
        request_id="Q3rB7hT5IAMEcGw=",
        authorized=False,
        ip="2001:db8::42",
        ua=SAFARI,
    )
    yield "query-v2.json", http_event(
        "POST",
        "/api/v2/query",
        route="POST /api/v2/query",
        at=T0 + 3_600_000,
        request_id="Q3rC2jV8IAMEcHg=",
        ip="198.51.100.77",
        ua=CURL,
        headers={
            "authorization": f"Bearer {API_KEY}",
            "content-type": "application/json",
        },
        body=json.dumps(
            {
                "site_id": SITE,
                "metrics": ["visitors", "pageviews", "bounce_rate"],
                "date_range": "7d",
                "dimensions": ["visit:source"],
            },
            separators=(",", ":"),
        ),
    )
    yield "query-dashboard.json", http_event(
        "GET",
        "/",
        route="GET /",
        at=T0 + 3_599_000,
        request_id="Q3r_xgE6IAMEb_g=",
        ip="198.51.100.77",
        ua=FIREFOX,
        headers={
            "accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "sec-fetch-dest": "document",
            "sec-fetch-mode": "navigate",
            "sec-fetch-site": "none",
            "sec-fetch-user": "?1",
            "upgrade-insecure-requests": "1",
        },
    )
    # A classic EventBridge rule (the template's `Schedule` event) delivers
    # source "aws.events" / "Scheduled Event"; EventBridge Scheduler
    # (`ScheduleV2`) would deliver "aws.scheduler" instead.
    yield "schedule.json", {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2026-11-30T01:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/tally-HourlyRollup"],
        "detail": {},
    }


def main():
    check = "--check" in sys.argv[1:]
    EVENTS.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, event in fixtures():
        text = json.dumps(event, indent=2, ensure_ascii=False) + "\n"
        path = EVENTS / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("stale fixtures (run infra/scripts/gen_events.py):", ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
