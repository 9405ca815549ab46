//! `tally segment add|list|remove` and `tally annotation add|list|remove`:
//! a site's saved segments and dated notes, built by core's
//! [`SegmentSpec`] and [`AnnotationSpec`] as the console builds them. The
//! CLI acts as the operator: it makes site-wide items, or with
//! `--personal --user EMAIL` that user's own; listings show every item,
//! personal ones with their owner.

use crate::Target;
use crate::admin::{SiteArg, connect, now_ms};
use anyhow::Context;
use clap::Subcommand;
use std::io::Write;
use tally_cli::sites::random;
use tally_core::product::annotation::AnnotationSpec;
use tally_core::product::saved_segment::{self, SegmentError, SegmentSpec};
use tally_store::Store;

/// `tally segment …`
#[derive(Subcommand, Debug)]
pub enum SegmentCommand {
    /// Save a named filter set.
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// Its name.
        #[arg(long)]
        name: String,
        /// Its filter (`page==/blog/*;country==DE`).
        #[arg(long)]
        filter: String,
        /// Only `--user`'s (else site-wide).
        #[arg(long, requires = "user")]
        personal: bool,
        /// The console user (email) a personal segment belongs to.
        #[arg(long)]
        user: Option<String>,
    },
    /// List a site's segments: id, kind, name, filter.
    List(SiteArg),
    /// Remove a segment (refused while a live shared link is locked to it).
    Remove {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The segment id.
        id: String,
    },
}

/// `tally annotation …`
#[derive(Subcommand, Debug)]
pub enum AnnotationCommand {
    /// Add a dated note.
    Add {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The site-local day (`2026-03-01`).
        #[arg(long)]
        date: String,
        /// The note (at most 500 characters).
        #[arg(long)]
        text: String,
        /// Only `--user`'s (else site-wide).
        #[arg(long, requires = "user")]
        personal: bool,
        /// The console user (email) a personal note belongs to.
        #[arg(long)]
        user: Option<String>,
    },
    /// List a site's annotations, oldest first.
    List(SiteArg),
    /// Remove an annotation by id.
    Remove {
        /// The site id.
        #[arg(long)]
        site: String,
        /// The annotation id.
        id: String,
    },
}

/// The creator of an item: the user of `--user` when personal, else `cli`.
async fn creator(store: &Store, personal: bool, user: Option<&str>) -> anyhow::Result<String> {
    match (personal, user) {
        (true, Some(email)) => Ok(store
            .user_by_email(email)
            .await?
            .with_context(|| format!("no console user {email:?}"))?
            .id),
        _ => Ok("cli".to_owned()),
    }
}

async fn site_exists(store: &Store, site: &str) -> anyhow::Result<()> {
    store
        .site(site)
        .await?
        .with_context(|| format!("no site {site:?}"))?;
    Ok(())
}

fn kind(owner: Option<&str>) -> String {
    owner.map_or_else(|| "site-wide".to_owned(), |o| format!("personal:{o}"))
}

/// Runs a `tally segment` command.
pub async fn segment(command: SegmentCommand, target: &Target) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        SegmentCommand::Add {
            site,
            name,
            filter,
            personal,
            user,
        } => {
            let spec = SegmentSpec {
                name,
                filter,
                personal,
            };
            // Checked before connecting: a bad option stores nothing.
            spec.build(1, "cli", 0)?;
            let store = connect(target).await;
            site_exists(&store, &site).await?;
            let by = creator(&store, personal, user.as_deref()).await?;
            let segment = spec.build(u32::from_le_bytes(random()?), &by, now_ms())?;
            saved_segment::check_new(&store.saved_segments(&site).await?, &segment)?;
            store.put_saved_segment(&site, &segment).await?;
            writeln!(out, "segment {} ({})", segment.id, segment.filter)?;
        }
        SegmentCommand::List(SiteArg { site }) => {
            let store = connect(target).await;
            for s in store.saved_segments(&site).await? {
                let kind = kind(s.owner.as_deref());
                writeln!(out, "{}\t{kind}\t{}\t{}", s.id, s.name, s.filter)?;
            }
        }
        SegmentCommand::Remove { site, id } => {
            let store = connect(target).await;
            let segments = store.saved_segments(&site).await?;
            if !segments.iter().any(|s| s.id == id) {
                return Err(SegmentError::Unknown(id).into());
            }
            saved_segment::check_removable(&store.shares(&site).await?, &id, now_ms())?;
            store.delete_saved_segment(&site, &id).await?;
            writeln!(out, "removed segment {id}")?;
        }
    }
    Ok(())
}

/// Runs a `tally annotation` command.
pub async fn annotation(command: AnnotationCommand, target: &Target) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        AnnotationCommand::Add {
            site,
            date,
            text,
            personal,
            user,
        } => {
            let spec = AnnotationSpec {
                date,
                text,
                personal,
            };
            spec.build(1, "cli", 0)?;
            let store = connect(target).await;
            site_exists(&store, &site).await?;
            let by = creator(&store, personal, user.as_deref()).await?;
            let note = spec.build(u32::from_le_bytes(random()?), &by, now_ms())?;
            tally_core::product::annotation::check_new(
                &store.annotations(&site, None).await?,
                &note,
            )?;
            store.put_annotation(&site, &note).await?;
            writeln!(out, "annotation {} on {}", note.id, note.date)?;
        }
        AnnotationCommand::List(SiteArg { site }) => {
            let store = connect(target).await;
            for a in store.annotations(&site, None).await? {
                let kind = kind(a.owner.as_deref());
                writeln!(
                    out,
                    "{}\t{}\t{kind}\t{}",
                    a.id,
                    a.date,
                    a.text.escape_debug()
                )?;
            }
        }
        AnnotationCommand::Remove { site, id } => {
            let store = connect(target).await;
            let note = store
                .annotations(&site, None)
                .await?
                .into_iter()
                .find(|a| a.id == id)
                .with_context(|| format!("no annotation {id:?}"))?;
            store.delete_annotation(&site, &note).await?;
            writeln!(out, "removed annotation {id}")?;
        }
    }
    Ok(())
}
