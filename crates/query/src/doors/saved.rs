//! Saved segments and annotations at the query function
//! (`tally_core::product::saved_segment`, `tally_core::product::annotation`).
//!
//! [`narrowing`]: what every report of a request is narrowed by before
//! its own `filters`: a shared link's filter, the segment the link is
//! locked to, then the segment `segment=ID` names, their conditions joined
//! in that order (`saved_segment::join`). A reader sees site-wide segments
//! and, signed in, their own personal ones; another id is 404
//! `unknown_segment`. A link whose segment is gone stops working (410
//! `share_segment_gone`): it never falls back to a wider view.
//!
//! [`annotations`]: `GET …/annotations?period=…` (or `from`/`to`), the
//! site-wide annotations and the reader's own in the range, oldest first.
//!
//! [`segments`]: `GET …/segments`, the segments a reader may name with
//! `segment=ID` (site-wide ones, and a signed-in member's own), so the
//! dashboard can offer them with whatever credential opened it.

use crate::access::Access;
use crate::batch::Reader;
use crate::doors::params;
use crate::download;
use crate::error::ApiError;
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use std::collections::BTreeMap;
use tally_core::engine::export::{Cell, Record};
use tally_core::engine::filter::Filter;
use tally_core::engine::query::ParseError;
use tally_core::product::annotation::Annotation;
use tally_core::product::saved_segment::{self, SavedSegment, SegmentError};

impl From<SegmentError> for ApiError {
    fn from(e: SegmentError) -> Self {
        Self {
            status: e.status(),
            code: e.code(),
            message: e.to_string(),
        }
    }
}

/// The signed-in reader's user id (keys and links have none).
pub(crate) fn reader_uid(access: &Access) -> Option<&str> {
    match access {
        Access::Member { uid, .. } => Some(uid),
        _ => None,
    }
}

/// A request's parameters without `segment`, and the filter every report
/// of it ANDs in first (see the module docs); `None` when nothing narrows.
pub(crate) async fn narrowing<S: QueryStore>(
    store: &S,
    site: &str,
    access: &Access,
    request: &Request,
) -> Result<(BTreeMap<String, String>, Option<Filter>), ApiError> {
    let mut params = params(request);
    let asked = params.remove("segment").filter(|s| !s.is_empty());
    let (link, locked) = match access {
        Access::Share(share) => (share.filter.as_str(), share.segment.as_deref()),
        _ => ("", None),
    };
    let mut parts = vec![Filter::parse(link).map_err(ParseError::from)?];
    if locked.is_some() || asked.is_some() {
        let segments = store.saved_segments(site).await?;
        if let Some(id) = locked {
            let segment = saved_segment::lockable(&segments, id).map_err(|_| ApiError {
                status: 410,
                code: "share_segment_gone",
                message: "the segment this link is locked to was removed".into(),
            })?;
            parts.push(parsed(segment)?);
        }
        if let Some(id) = asked {
            parts.push(parsed(saved_segment::find(
                &segments,
                &id,
                reader_uid(access),
            )?)?);
        }
    }
    let joined = saved_segment::join(&parts).map_err(ParseError::from)?;
    Ok((params, joined))
}

fn parsed(segment: &SavedSegment) -> Result<Filter, ApiError> {
    Ok(segment.parsed().map_err(ParseError::from)?)
}

/// `GET …/segments`.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentList {
    /// The site.
    pub site_id: String,
    /// What the reader may use, by name: `{id, name, filter, personal}`.
    pub results: Vec<SegmentRow>,
}

/// One segment as a reader sees it (not who made it).
#[derive(Debug, Clone, Serialize)]
pub struct SegmentRow {
    /// Its id (`segment=ID`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The filter it narrows by (the `filters` syntax).
    pub filter: String,
    /// Whether it is the reader's own.
    pub personal: bool,
}

/// `GET …/segments`: the segments `reader_uid(access)` sees, by name; a
/// shared link sees the site-wide ones (naming one only narrows it more).
pub(crate) async fn segments<S: QueryStore>(
    store: &S,
    site: &str,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    if let Some(unknown) = params(request).keys().next() {
        return Err(ApiError::bad_request(
            "unknown_parameter",
            format!("unknown parameter {unknown:?}: segments take none"),
        ));
    }
    let uid = reader_uid(access);
    let mut results: Vec<SegmentRow> = store
        .saved_segments(site)
        .await?
        .into_iter()
        .filter(|s| s.visible_to(uid))
        .map(|s| SegmentRow {
            personal: s.personal(),
            id: s.id,
            name: s.name,
            filter: s.filter,
        })
        .collect();
    results.sort_by_key(|a| a.name.to_lowercase());
    Ok(crate::error::json_response(
        200,
        &SegmentList {
            site_id: site.to_owned(),
            results,
        },
    ))
}

/// `GET …/annotations`.
#[derive(Debug, Clone, Serialize)]
pub struct AnnotationList {
    /// The site.
    pub site_id: String,
    /// The first and last local day.
    pub from: String,
    /// The last local day.
    pub to: String,
    /// The annotations, oldest first: `{id, date, text, personal}`.
    pub results: Vec<AnnotationRow>,
}

/// One annotation as the API shows it (not who made it).
#[derive(Debug, Clone, Serialize)]
pub struct AnnotationRow {
    /// Its id.
    pub id: String,
    /// Its local day.
    pub date: String,
    /// The note (plain text: a page shows it as text).
    pub text: String,
    /// Whether it is the reader's own.
    pub personal: bool,
}

impl AnnotationRow {
    fn of(a: &Annotation) -> Self {
        Self {
            id: a.id.clone(),
            date: a.date.clone(),
            text: a.text.clone(),
            personal: a.owner.is_some(),
        }
    }
}

/// `GET …/annotations?period=…` (or `from`/`to`; the reports' periods),
/// as JSON or CSV.
pub(crate) async fn annotations<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    let format = crate::download::requested_format(request)?;
    let (from, to, _) = crate::doors::local_period(reader, request, "annotations", &["format"])?;
    let uid = reader_uid(access);
    let results: Vec<AnnotationRow> = store
        .annotations(&reader.site.id, &from, &to)
        .await?
        .iter()
        .filter(|a| a.visible_to(uid))
        .map(AnnotationRow::of)
        .collect();
    let rows: Vec<Record> = results
        .iter()
        .map(|a| {
            vec![
                ("date".to_owned(), Cell::Text(a.date.clone())),
                ("text".to_owned(), Cell::Text(a.text.clone())),
                ("personal".to_owned(), Cell::Text(a.personal.to_string())),
            ]
        })
        .collect();
    let body = AnnotationList {
        site_id: reader.site.id.clone(),
        from,
        to,
        results,
    };
    download::respond_rows(&body, Some(&rows), format, &reader.site.id, "annotations")
}
