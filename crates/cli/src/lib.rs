//! The `tally` command's library half: moving a site's data in and out
//! ([`transfer`]), used by `tally import` and `tally export` and by the
//! tests that check a round trip; creating and changing sites and keys
//! ([`sites`]), over the same core builders as the console.

pub mod sites;
pub mod transfer;
