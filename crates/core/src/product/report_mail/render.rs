//! The report mail, from the dashboard body the API answers for the same
//! request (`dashboard?period=custom&from=…&to=…&compare=previous&
//! interval=day&dimensions=page,source,goal&limit=…`), so its figures are
//! the API's by construction.
//!
//! HTML for mail clients: tables and inline styles only, no images, no
//! scripts, no remote resources; the chart is a table of bars (cells with
//! a background colour and a height), which Gmail, Outlook and Apple Mail
//! all draw. The text part carries the same figures, one per line
//! (`Visitors: 1,234 (+12.5%)`).

use crate::engine::query::metric::Figure;
use crate::engine::query::tally::body::{BreakdownPart, DashboardBody};
use crate::engine::range::DateRange;
use crate::product::report_mail::schedule::Kind;
use crate::time::zone::format_date;

/// A rendered report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedReport {
    /// The subject line.
    pub subject: String,
    /// The HTML part.
    pub html: String,
    /// The plain-text part.
    pub text: String,
}

/// The headline figures, as the API names them, and their labels.
pub const HEADLINE: [(&str, &str); 5] = [
    ("visitors", "Visitors"),
    ("visits", "Visits"),
    ("pageviews", "Page views"),
    ("bounce_rate", "Bounce rate"),
    ("visit_duration", "Visit duration"),
];

/// The lists, by the dashboard's dimension name: their title and the
/// figure they show.
pub const LISTS: [(&str, &str, &str); 3] = [
    ("page", "Top pages", "visitors"),
    ("source", "Top sources", "visitors"),
    ("goal", "Goals", "conversions"),
];

/// HTML-escapes text for an element or a quoted attribute.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole number with thousands separators.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A figure as the mail shows it (`name` says its unit).
pub fn show(name: &str, f: &Figure) -> String {
    match (name, f) {
        ("visit_duration", Figure::Count(s)) => {
            if *s >= 60 {
                format!("{}m {:02}s", s / 60, s % 60)
            } else {
                format!("{s}s")
            }
        }
        ("bounce_rate", Figure::Number(x)) => format!("{x}%"),
        ("bounce_rate", Figure::Count(x)) => format!("{x}%"),
        (_, Figure::Count(n)) => grouped(*n),
        (_, Figure::Number(x)) => format!("{x}"),
        _ => "–".to_owned(),
    }
}

/// A change as the mail shows it: percent, or points for the bounce rate.
pub fn show_change(name: &str, change: Option<f64>) -> String {
    match change {
        None => "new".to_owned(),
        Some(c) => {
            let unit = if name == "bounce_rate" { " pts" } else { "%" };
            if c > 0.0 {
                format!("+{c}{unit}")
            } else {
                format!("{c}{unit}")
            }
        }
    }
}

fn figure<'a>(figures: &'a crate::engine::query::Named<Figure>, name: &str) -> Option<&'a Figure> {
    figures.0.iter().find(|(n, _)| n == name).map(|(_, f)| f)
}

fn count(f: Option<&Figure>) -> u64 {
    match f {
        Some(Figure::Count(n)) => *n,
        Some(Figure::Number(x)) if *x > 0.0 => *x as u64,
        _ => 0,
    }
}

/// "the week of 5–11 January 2026" style label of a period.
pub fn period_label(kind: Kind, period: DateRange) -> String {
    match kind {
        Kind::Weekly => format!(
            "week {} to {}",
            format_date(period.from),
            format_date(period.to)
        ),
        Kind::Monthly => format!("{} {}", period.from.month(), period.from.year()),
    }
}

/// Renders the report of `site` for `period` from the dashboard `body`;
/// `unsubscribe` is the recipient's own link, `dashboard` the site's
/// dashboard (both absolute URLs).
pub fn render_report(
    site: &str,
    kind: Kind,
    period: DateRange,
    body: &DashboardBody,
    dashboard: &str,
    unsubscribe: &str,
) -> RenderedReport {
    let label = period_label(kind, period);
    let subject = format!("{site}: your {} report, {label}", kind.as_str());
    let stats = &body.stats;
    let change = |name: &str| -> Option<f64> {
        stats
            .change
            .as_ref()
            .and_then(|c| c.0.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v))
    };
    let mut text = format!("{subject}\n\n");
    let mut cards = String::new();
    for (name, title) in HEADLINE {
        let value = figure(&stats.results, name).map_or("–".to_owned(), |f| show(name, f));
        let delta = if stats.comparison.is_some() {
            show_change(name, change(name))
        } else {
            "new".to_owned()
        };
        text.push_str(&format!("{title}: {value} ({delta})\n"));
        let colour = match change(name) {
            Some(c) if (c > 0.0) != (name == "bounce_rate") && c != 0.0 => "#15803d",
            Some(c) if c != 0.0 => "#b91c1c",
            _ => "#6b7280",
        };
        cards.push_str(&format!(
            "<td style=\"padding:8px 12px;border:1px solid #e5e7eb;border-radius:6px\">\
             <div style=\"font-size:12px;color:#6b7280\">{}</div>\
             <div style=\"font-size:20px;font-weight:bold;color:#111827\">{}</div>\
             <div style=\"font-size:12px;color:{colour}\">{}</div></td>",
            escape_html(title),
            escape_html(&value),
            escape_html(&delta)
        ));
    }
    // The chart: visitors per day as bars of table cells, 80 px at most.
    let series = &body.timeseries.results;
    let peak = series
        .iter()
        .map(|r| count(figure(&r.figures, "visitors")))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut bars = String::new();
    let mut days = String::new();
    text.push_str("\nVisitors per day:\n");
    for row in series {
        let v = count(figure(&row.figures, "visitors"));
        let h = (v * 80).div_ceil(peak).max(1);
        bars.push_str(&format!(
            "<td valign=\"bottom\" align=\"center\" style=\"padding:0 2px\">\
             <div style=\"font-size:10px;color:#6b7280\">{v}</div>\
             <table role=\"presentation\" cellpadding=\"0\" cellspacing=\"0\" width=\"100%\">\
             <tr><td height=\"{h}\" bgcolor=\"#4f46e5\" style=\"height:{h}px;line-height:{h}px;\
             font-size:1px;background-color:#4f46e5\">&nbsp;</td></tr></table></td>"
        ));
        let day = row.date.get(8..10).unwrap_or(&row.date);
        days.push_str(&format!(
            "<td align=\"center\" style=\"font-size:10px;color:#6b7280\">{}</td>",
            escape_html(day)
        ));
        text.push_str(&format!("  {}: {}\n", row.date, grouped(v)));
    }
    let mut lists = String::new();
    for (dim, title, metric) in LISTS {
        let empty = BreakdownPart {
            results: Vec::new(),
            total_rows: 0,
        };
        let part = body.breakdowns.get(dim).unwrap_or(&empty);
        text.push_str(&format!("\n{title}:\n"));
        let mut rows = String::new();
        for row in &part.results {
            let n = count(figure(&row.figures, metric));
            text.push_str(&format!("  {} {}\n", row.value, grouped(n)));
            rows.push_str(&format!(
                "<tr><td style=\"padding:3px 0;font-size:13px;color:#111827\">{}</td>\
                 <td align=\"right\" style=\"padding:3px 0;font-size:13px;color:#111827\">{}</td></tr>",
                escape_html(&row.value),
                grouped(n)
            ));
        }
        if part.results.is_empty() {
            text.push_str("  (none)\n");
            rows.push_str(
                "<tr><td colspan=\"2\" style=\"font-size:13px;color:#6b7280\">None</td></tr>",
            );
        }
        lists.push_str(&format!(
            "<h3 style=\"font-size:14px;margin:18px 0 4px;color:#111827\">{}</h3>\
             <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\">\
             <tr><td style=\"font-size:11px;color:#6b7280\"></td>\
             <td align=\"right\" style=\"font-size:11px;color:#6b7280\">{}</td></tr>{rows}</table>",
            escape_html(title),
            escape_html(metric)
        ));
    }
    let compared = body
        .meta
        .comparison
        .as_ref()
        .map(|c| format!("Changes against {} to {}.", c.from, c.to))
        .unwrap_or_default();
    text.push_str(&format!(
        "\n{compared}\nDashboard: {dashboard}\nUnsubscribe: {unsubscribe}\n"
    ));
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title></head>\
         <body style=\"margin:0;padding:0;background:#f3f4f6;font-family:Arial,Helvetica,sans-serif\">\
         <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" bgcolor=\"#f3f4f6\">\
         <tr><td align=\"center\" style=\"padding:24px 8px\">\
         <table role=\"presentation\" width=\"600\" cellpadding=\"0\" cellspacing=\"0\" bgcolor=\"#ffffff\" \
         style=\"max-width:600px;background:#ffffff;border-radius:8px\"><tr><td style=\"padding:24px\">\
         <div style=\"font-size:12px;color:#6b7280\">Tally · {kind} report</div>\
         <h2 style=\"margin:4px 0 16px;font-size:20px;color:#111827\">{site} · {label}</h2>\
         <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"4\"><tr>{cards}</tr></table>\
         <h3 style=\"font-size:14px;margin:18px 0 4px;color:#111827\">Visitors per day</h3>\
         <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" height=\"100\">\
         <tr>{bars}</tr><tr>{days}</tr></table>{lists}\
         <p style=\"font-size:12px;color:#6b7280;margin-top:20px\">{compared} \
         <a href=\"{dash}\" style=\"color:#4f46e5\">Open the dashboard</a></p>\
         <p style=\"font-size:11px;color:#9ca3af\">You get this because you subscribed to {kind} reports of {site}. \
         <a href=\"{unsub}\" style=\"color:#9ca3af\">Unsubscribe</a></p>\
         </td></tr></table></td></tr></table></body></html>",
        title = escape_html(&subject),
        kind = kind.as_str(),
        site = escape_html(site),
        label = escape_html(&label),
        compared = escape_html(&compared),
        dash = escape_html(dashboard),
        unsub = escape_html(unsubscribe),
    );
    RenderedReport {
        subject,
        html,
        text,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn numbers_durations_and_changes_read_as_people_write_them() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(show("visit_duration", &Figure::Count(125)), "2m 05s");
        assert_eq!(show("visit_duration", &Figure::Count(42)), "42s");
        assert_eq!(show("bounce_rate", &Figure::Number(41.5)), "41.5%");
        assert_eq!(show_change("visitors", Some(12.5)), "+12.5%");
        assert_eq!(show_change("bounce_rate", Some(-3.0)), "-3 pts");
        assert_eq!(show_change("visits", None), "new");
    }

    #[test]
    fn text_is_escaped_in_html() {
        assert_eq!(
            escape_html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
