//! Email reports (issue 23): weekly and monthly figures of a site mailed
//! to its subscribers at a morning hour in the site's zone.
//!
//! Pure, as the rest of core: the job passes in now, the site's zone, its
//! subscriptions, which reports it already marked, the unsubscribe secret
//! and the answers of the read.
//! - [`schedule`]: subscriptions ([`Subscription`], built by
//!   [`SubscriptionSpec`] for the CLI and the console alike), which report
//!   covers which days and when it is due ([`due_reports`]);
//! - [`token`]: the signed, per-recipient unsubscribe token;
//! - [`render`]: the mail's subject, HTML (a table chart: no images) and
//!   text, from the dashboard body the API answers for the same range.

pub mod render;
pub mod schedule;
pub mod token;

pub use render::{RenderedReport, render_report};
pub use schedule::{
    Due, Kind, MAX_SUBSCRIPTIONS, SEND_HOUR, SendState, Subscription, SubscriptionError,
    SubscriptionSpec, due_reports, period_for,
};
pub use token::{UnsubscribeToken, sign_unsubscribe, verify_unsubscribe};
