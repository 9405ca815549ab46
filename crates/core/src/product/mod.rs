//! What a team does with its figures beyond reading them: alerts, email
//! reports, saved segments, annotations, trusted conversions, imported
//! history and deleting a site. Each stands on the engine and accounts.
//!
//! - [`alert`]: spike and drop detection and the alert payloads.
//! - [`report_mail`]: weekly and monthly email reports.
//! - [`saved_segment`]: named filter sets of a site.
//! - [`annotation`]: dated notes drawn on the dashboard.
//! - [`conversion`]: trusted server-side conversions and affiliates.
//! - [`import`]: imported daily history from CSV files.
//! - [`deletion`]: deleting a site, in order, until done.
//! - [`outbound`]: which hosts an outbound request may reach.

pub mod alert;
pub mod annotation;
pub mod conversion;
pub mod deletion;
pub mod import;
pub mod outbound;
pub mod report_mail;
pub mod saved_segment;
