//! Reports as files: `format=csv` (or `Accept: text/csv`) turns a report's
//! rows into CSV ([`tally_core::export::report_csv`]); `format=zip` on the
//! dashboard gives one ZIP of its panels' CSVs (totals, the series, every
//! breakdown and property), what the dashboard's Download button saves.

use crate::error::ApiError;
use lambda_http::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use std::collections::HashMap;
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

/// A name safe in a file name: letters, digits, `-` and `_`.
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect()
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

/// The dashboard's panels as CSV files in one ZIP.
fn dashboard_zip(json: &Value) -> Result<Vec<u8>, ApiError> {
    let mut files: Vec<(String, String)> = Vec::new();
    let mut add = |name: String, results: &Value| {
        if let Some(text) = report_csv(results) {
            files.push((name, text));
        }
    };
    add("totals.csv".into(), &json["stats"]["results"]);
    add("timeseries.csv".into(), &json["timeseries"]["results"]);
    for (group, prefix) in [("breakdowns", ""), ("props", "props-")] {
        if let Some(parts) = json[group].as_object() {
            for (key, part) in parts {
                add(format!("{prefix}{}.csv", file_part(key)), &part["results"]);
            }
        }
    }
    let failed = |e: &dyn std::fmt::Display| ApiError {
        status: 500,
        code: "internal",
        message: format!("could not build the ZIP: {e}"),
    };
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, text) in files {
        zip.start_file(name, options).map_err(|e| failed(&e))?;
        zip.write_all(text.as_bytes()).map_err(|e| failed(&e))?;
    }
    Ok(zip.finish().map_err(|e| failed(&e))?.into_inner())
}
