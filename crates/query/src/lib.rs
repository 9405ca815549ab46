//! `tally-query`: the stats API and the dashboard (built by the query API issue).
