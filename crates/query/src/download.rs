//! Reports as files, rendered from the typed body (never from JSON just
//! written): `format=csv` (or `Accept: text/csv`) writes a report's rows
//! as CSV (`tally_core::engine::query::tally::body::Body::csv`); `format=zip` on
//! the dashboard gives one ZIP of its panels' CSVs (`Body::panels`: totals,
//! the series, every breakdown and property), what the dashboard's
//! Download button saves.
//!
//! Entry names are made from report names and property keys, which come
//! from visitors: each is cut to letters, digits, `-` and `_` (at most
//! [`MAX_NAME_PART`] characters), and a name already taken, ignoring case
//! (`a b` and `a_b` both make `props-a_b.csv`), gets the first free `-2`,
//! `-3`, … suffix, in the panels' order (a key that is its own safe name
//! first), so the same dashboard always gives the same names. `index.csv`
//! says which panel each entry holds.

use crate::error::{ApiError, typed_response};
use lambda_http::Body;
use lambda_http::Response;
use lambda_http::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use serde::Serialize;
use std::collections::HashSet;
use std::io::Write;
use tally_core::engine::export::{Cell, Record, table_csv};
use tally_core::engine::query::ParseError;
use tally_core::engine::query::tally::Format;
use tally_core::engine::query::tally::body::{Body as Report, Panel};

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

/// The format a request asks for: `format=`, else its `Accept` header.
pub(crate) fn requested_format(request: &lambda_http::Request) -> Result<Format, ApiError> {
    // The last `format=` counts, as in the doors' parameter map.
    let asked = url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "format")
        .last()
        .map(|(_, v)| v.into_owned());
    let accept = tally_lambda::request::header(request, "accept");
    Ok(Format::parse(asked.as_deref(), accept)?)
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

/// A report in the format asked for; `name` is the report's (`stats`,
/// `breakdown-page`, `dashboard`): JSON, its rows as CSV
/// ([`Report::csv`]), or the dashboard's panels as a ZIP
/// ([`Report::panels`]).
pub fn respond(
    report: &Report,
    format: Format,
    site: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let base = format!("{}-{}", file_part(site), file_part(name));
    match format {
        Format::Json => Ok(typed_response(report)),
        Format::Csv => Ok(file_response(
            Body::Text(report.csv()?),
            "text/csv; charset=utf-8",
            &format!("{base}.csv"),
        )),
        Format::Zip => Ok(file_response(
            Body::Binary(zip_of(&report.panels()?)?),
            "application/zip",
            &format!("{base}.zip"),
        )),
    }
}

/// A body that is no report, in the format asked for: JSON, or `rows` as
/// CSV when it has rows (`funnels`); never a ZIP.
pub fn respond_rows<T: Serialize>(
    body: &T,
    rows: Option<&[Record]>,
    format: Format,
    site: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    match (format, rows) {
        (Format::Json, _) => Ok(typed_response(body)),
        (Format::Csv, Some(rows)) => {
            let text = table_csv(rows).ok_or_else(no_rows)?;
            let base = format!("{}-{}", file_part(site), file_part(name));
            Ok(file_response(
                Body::Text(text),
                "text/csv; charset=utf-8",
                &format!("{base}.csv"),
            ))
        }
        (Format::Csv, None) => Err(no_rows()),
        (Format::Zip, _) => Err(ApiError::bad_request(
            "invalid_format",
            "format=zip is for the dashboard, format=csv for single reports",
        )),
    }
}

fn no_rows() -> ApiError {
    ParseError::new(
        "invalid_format",
        "this endpoint has no rows to write as CSV",
    )
    .into()
}

/// The dashboard's panels as CSV files in one ZIP, with `index.csv`
/// naming the panel of each: the totals and the series, then each group
/// (dimensions, property keys) with the keys that are their own safe name
/// first.
fn zip_of(panels: &[Panel]) -> Result<Vec<u8>, ApiError> {
    let mut names = Names::default();
    names.claim("", "index");
    let (fixed, groups) = panels.split_at(panels.len().min(2));
    // (entry, panel, CSV)
    let mut files: Vec<(String, &str, &str)> = fixed
        .iter()
        .map(|p| {
            (
                names.claim(p.prefix, &p.key),
                p.panel.as_str(),
                p.csv.as_str(),
            )
        })
        .collect();
    for prefix in ["", "props-"] {
        // Keys that are their own safe name keep it; the others, cut or
        // changed, get theirs after (a suffix when it is taken).
        let (own, changed): (Vec<&Panel>, Vec<&Panel>) = groups
            .iter()
            .filter(|p| p.prefix == prefix)
            .partition(|p| file_part(&p.key) == p.key);
        for p in own.into_iter().chain(changed) {
            let name = names.claim(prefix, &file_part(&p.key));
            files.push((name, p.panel.as_str(), p.csv.as_str()));
        }
    }
    let failed = |e: &dyn std::fmt::Display| ApiError {
        status: 500,
        code: "internal",
        message: format!("could not build the ZIP: {e}"),
    };
    let rows: Vec<Record> = files
        .iter()
        .map(|(name, panel, _)| {
            vec![
                ("file".to_owned(), Cell::Text(name.clone())),
                ("panel".to_owned(), Cell::Text((*panel).to_owned())),
            ]
        })
        .collect();
    let index = match table_csv(&rows) {
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
        let panel = |prefix: &'static str, key: &str, name: &str, v: &str| Panel {
            prefix,
            key: key.to_owned(),
            panel: name.to_owned(),
            csv: format!("value,visitors\n{v},1\n"),
        };
        let mut keys = [
            "a b".to_owned(),
            "a_b".to_owned(),
            "A_B".to_owned(),
            "a.b".to_owned(),
            "a_b-2".to_owned(),
            long('x'),
            long('y'),
        ];
        // The dashboard's property keys come in key order.
        keys.sort();
        let mut panels = vec![
            panel("", "totals", "stats", "1"),
            panel("", "timeseries", "timeseries", "2026-01-01"),
            panel("", "source", "breakdown/source", "Google"),
        ];
        panels.extend(
            keys.iter()
                .map(|k| panel("props-", k, &format!("props:{k}"), k)),
        );
        let got = entries(zip_of(&panels).unwrap());
        assert_eq!(got, entries(zip_of(&panels).unwrap()), "fixed");
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
