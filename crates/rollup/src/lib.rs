//! `tally-rollup`: scheduled day rollups (built by the rollup issue).
