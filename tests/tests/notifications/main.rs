//! Notifications: mail through SES (moto), email reports, traffic alerts and the first owner's setup link.
//!
//! One test binary of several areas (each a module), so CI links it once.

mod alerts;
mod email_reports;
mod mail;
