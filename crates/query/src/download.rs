//! Reports as files: `format=csv` (or `Accept: text/csv`) turns a report's
//! rows into CSV ([`tally_core::export::report_csv`]); `format=zip` on the
//! dashboard gives one ZIP of its panels' CSVs (totals, the series, every
//! breakdown and property), what the dashboard's Download button saves.
//!
//! Entry names are made from report names and property keys, which come
//! from visitors: each is cut to letters, digits, `-` and `_` (at most
//! [`MAX_NAME_PART`] characters), and a name already taken, ignoring case
//! (`a b` and `a_b` both make `props-a_b.csv`), gets the first free `-2`,
//! `-3`, … suffix, in the panels' order (a key that is its own safe name
//! first), so the same dashboard always gives the same names. `index.csv`
//! says which panel each entry holds.

use crate::error::ApiError;
use lambda_http::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use tally_core::export::report_csv;

/// How a report is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (the default).
    Json,
    /// The rows as CSV.
    Csv,
    /// A ZIP of CSV files (the dashboard).
    Zip,
}

/// The format a request asks for (`format=` wins over `Accept`); `format`
/// is taken out of the parameters.
pub fn format_of(request: &Request, q: &mut HashMap<String, String>) -> Result<Format, ApiError> {
    match q.remove("format").as_deref() {
        Some("json") => Ok(Format::Json),
        Some("csv") => Ok(Format::Csv),
        Some("zip") => Ok(Format::Zip),
        Some(other) => Err(ApiError::bad_request(
            "invalid_format",
            format!("unknown format {other:?}: use json, csv or zip (the dashboard)"),
        )),
        None => {
            let accept = tally_lambda::request::header(request, "accept").unwrap_or_default();
            Ok(if accept.contains("text/csv") {
                Format::Csv
            } else {
                Format::Json
            })
        }
    }
}

fn body_json(response: &Response<Body>) -> Option<Value> {
    let bytes: &[u8] = response.body().as_ref();
    serde_json::from_slice(bytes).ok()
}

fn file_response(body: Body, content_type: &'static str, name: &str) -> Response<Body> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(CONTENT_DISPOSITION, v);
    }
    h.insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

/// The longest part of a file name made from a report's name or a
/// property key, characters.
pub const MAX_NAME_PART: usize = 60;

/// A name safe in a file name: letters, digits, `-` and `_`, at most
/// [`MAX_NAME_PART`] characters.
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_PART)
        .collect()
}

/// Entry names given so far, so that each is unique ignoring case (a ZIP
/// unpacked on a case-insensitive file system keeps every entry).
#[derive(Default)]
struct Names {
    taken: HashSet<String>,
}

impl Names {
    /// `{prefix}{part}.csv` for the first free part: `part` itself, else
    /// `part-2`, `part-3`, … (cut to leave room for the suffix).
    fn claim(&mut self, prefix: &str, part: &str) -> String {
        let mut n = 1u32;
        loop {
            let name = if n == 1 {
                format!("{prefix}{part}.csv")
            } else {
                let suffix = format!("-{n}");
                let keep = MAX_NAME_PART.saturating_sub(suffix.len());
                let base: String = part.chars().take(keep).collect();
                format!("{prefix}{base}{suffix}.csv")
            };
            if self.taken.insert(name.to_ascii_lowercase()) {
                return name;
            }
            n += 1;
        }
    }
}

/// Converts a successful JSON report into the format asked for; `name`
/// is the report's (`stats`, `breakdown-page`, `dashboard`).
pub fn convert(
    response: Response<Body>,
    format: Format,
    site: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    if format == Format::Json || response.status() != 200 {
        return Ok(response);
    }
    let json = body_json(&response).unwrap_or(Value::Null);
    let is_dashboard = json.get("breakdowns").is_some();
    let base = format!("{}-{}", file_part(site), file_part(name));
    match format {
        Format::Csv if !is_dashboard => {
            let text = report_csv(&json["results"]).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_format",
                    "this endpoint has no rows to write as CSV",
                )
            })?;
            Ok(file_response(
                Body::Text(text),
                "text/csv; charset=utf-8",
                &format!("{base}.csv"),
            ))
        }
        Format::Zip if is_dashboard => Ok(file_response(
            Body::Binary(dashboard_zip(&json)?),
            "application/zip",
            &format!("{base}.zip"),
        )),
        _ => Err(ApiError::bad_request(
            "invalid_format",
            "format=zip is for the dashboard, format=csv for single reports",
        )),
    }
}

/// The dashboard's panels as CSV files in one ZIP, with `index.csv`
/// naming the panel of each.
fn dashboard_zip(json: &Value) -> Result<Vec<u8>, ApiError> {
    let mut names = Names::default();
    names.claim("", "index");
    // (entry, panel, CSV)
    let mut files: Vec<(String, String, String)> = Vec::new();
    for (part, panel, group) in [
        ("totals", "stats", "stats"),
        ("timeseries", "timeseries", "timeseries"),
    ] {
        if let Some(text) = report_csv(&json[group]["results"]) {
            files.push((names.claim("", part), panel.to_owned(), text));
        }
    }
    for (group, prefix, panel) in [
        ("breakdowns", "", "breakdown/"),
        ("props", "props-", "props:"),
    ] {
        let Some(parts) = json[group].as_object() else {
            continue;
        };
        // Keys that are their own safe name keep it; the others, cut or
        // changed, get theirs after (a suffix when it is taken).
        let (own, changed): (Vec<_>, Vec<_>) = parts
            .iter()
            .partition(|(key, _)| file_part(key) == key.as_str());
        for (key, part) in own.into_iter().chain(changed) {
            if let Some(text) = report_csv(&part["results"]) {
                let name = names.claim(prefix, &file_part(key));
                files.push((name, format!("{panel}{key}"), text));
            }
        }
    }
    let failed = |e: &dyn std::fmt::Display| ApiError {
        status: 500,
        code: "internal",
        message: format!("could not build the ZIP: {e}"),
    };
    let rows: Vec<Value> = files
        .iter()
        .map(|(name, panel, _)| serde_json::json!({"file": name, "panel": panel}))
        .collect();
    let index = match report_csv(&Value::Array(rows)) {
        Some(text) if !files.is_empty() => text,
        _ => "file,panel\n".to_owned(),
    };
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("index.csv", options)
        .map_err(|e| failed(&e))?;
    zip.write_all(index.as_bytes()).map_err(|e| failed(&e))?;
    for (name, _, text) in files {
        zip.start_file(name, options).map_err(|e| failed(&e))?;
        zip.write_all(text.as_bytes()).map_err(|e| failed(&e))?;
    }
    Ok(zip.finish().map_err(|e| failed(&e))?.into_inner())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Read;

    fn entries(bytes: Vec<u8>) -> Vec<(String, String)> {
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        (0..archive.len())
            .map(|i| {
                let mut entry = archive.by_index(i).unwrap();
                let mut text = String::new();
                entry.read_to_string(&mut text).unwrap();
                (entry.name().unwrap().into_owned(), text)
            })
            .collect()
    }

    #[test]
    fn keys_that_make_the_same_name_get_distinct_entries_in_a_fixed_order() {
        let long = |last: char| format!("{}{last}", "k".repeat(70));
        let panel = |v: &str| json!({"results": [{"value": v, "visitors": 1}]});
        let keys = [
            "a b".to_owned(),
            "a_b".to_owned(),
            "A_B".to_owned(),
            "a.b".to_owned(),
            "a_b-2".to_owned(),
            long('x'),
            long('y'),
        ];
        let props: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.clone(), panel(k))).collect();
        let dashboard = json!({
            "stats": {"results": {"visitors": 1}},
            "timeseries": {"results": [{"date": "2026-01-01", "visitors": 1}]},
            "breakdowns": {"source": panel("Google")},
            "props": props,
        });
        let got = entries(dashboard_zip(&dashboard).unwrap());
        assert_eq!(got, entries(dashboard_zip(&dashboard).unwrap()), "fixed");
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        let cut = "k".repeat(MAX_NAME_PART);
        let cut_2 = format!("{}-2", "k".repeat(MAX_NAME_PART - 2));
        assert_eq!(
            names,
            [
                "index.csv",
                "totals.csv",
                "timeseries.csv",
                "source.csv",
                // Keys that are their own name first, in key order, unique
                // ignoring case; then the changed ones.
                "props-A_B.csv",
                "props-a_b-2.csv",
                "props-a_b-2-2.csv",
                "props-a_b-3.csv",
                "props-a_b-4.csv",
                &format!("props-{cut}.csv"),
                &format!("props-{cut_2}.csv"),
            ]
        );
        // The index names each entry's panel; each entry holds its key's rows.
        let index = &got[0].1;
        let mut lines = index.lines();
        assert_eq!(lines.next(), Some("file,panel"));
        let mut mapped = 0;
        for line in lines {
            let (file, panel) = line.split_once(',').unwrap();
            let text = &got.iter().find(|(n, _)| n == file).unwrap().1;
            if let Some(key) = panel.strip_prefix("props:") {
                assert!(text.contains(&format!("\n{key},")), "{file}: {text}");
                mapped += 1;
            }
        }
        assert_eq!(mapped, keys.len());
    }
}
