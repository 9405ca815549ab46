//! `tally`: the local stack (`tally dev`) and the admin commands.
//!
//! Admin commands work against `tally dev` (`--dynamodb-endpoint URL`) and
//! against AWS (the default credential chain, `--region`).

mod accounts;
mod admin;
mod affiliate;
mod alert;
mod dev;
mod history;
mod report;
mod rollup;
mod saved;
mod share;

use clap::{Parser, Subcommand};

/// Tally: privacy-first web analytics on Lambda and DynamoDB.
#[derive(Parser, Debug)]
#[command(name = "tally", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the table is.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    /// A DynamoDB-compatible endpoint (for example `tally dev`'s); default AWS.
    #[arg(long, env = "DYNAMODB_ENDPOINT", global = true)]
    dynamodb_endpoint: Option<String>,
    /// The table name.
    #[arg(long, env = "TABLE_NAME", default_value = "tally", global = true)]
    table: String,
    /// The AWS region.
    #[arg(long, env = "AWS_REGION", global = true)]
    region: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the whole stack on this machine: embedded DynamoDB, ingest, query, demo.
    Dev(dev::DevArgs),
    /// Manage sites.
    Site {
        #[command(subcommand)]
        command: admin::SiteCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage API keys.
    Key {
        #[command(subcommand)]
        command: admin::KeyCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage affiliates (trusted conversions' commissions).
    Affiliate {
        #[command(subcommand)]
        command: affiliate::AffiliateCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Run the scheduled job now: compaction into segments, then day
    /// rollups (or backfill `--from`..`--to`).
    Rollup {
        #[command(flatten)]
        args: rollup::RollupArgs,
        #[command(flatten)]
        target: Target,
    },
    /// Manage goals.
    Goal {
        #[command(subcommand)]
        command: admin::GoalCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage funnels.
    Funnel {
        #[command(subcommand)]
        command: admin::FunnelCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Import daily history: Plausible's CSV export or daily CSV files.
    Import {
        #[command(subcommand)]
        command: history::ImportCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Export a site's events (NDJSON, CSV) or its daily figures (CSV files).
    Export {
        #[command(flatten)]
        args: history::ExportArgs,
        #[command(flatten)]
        target: Target,
    },
    /// Print a single-use token (24 h) that creates the console's instance owner.
    SetupToken {
        #[command(flatten)]
        target: Target,
    },
    /// Manage console users.
    User {
        #[command(subcommand)]
        command: accounts::UserCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Traffic alerts: settings, the delivery log, the job's step by hand.
    Alert {
        #[command(subcommand)]
        command: alert::AlertCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage email report recipients (weekly, monthly).
    Report {
        #[command(subcommand)]
        command: report::ReportCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage shared dashboard links (read-only, no key needed).
    Share {
        #[command(subcommand)]
        command: share::ShareCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage saved segments (named filter sets).
    Segment {
        #[command(subcommand)]
        command: saved::SegmentCommand,
        #[command(flatten)]
        target: Target,
    },
    /// Manage annotations (dated notes on the dashboard's chart).
    Annotation {
        #[command(subcommand)]
        command: saved::AnnotationCommand,
        #[command(flatten)]
        target: Target,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Dev(args) => dev::run(args).await,
        Command::Site { command, target } => admin::site(command, &target).await,
        Command::Key { command, target } => admin::key(command, &target).await,
        Command::Affiliate { command, target } => affiliate::run(command, &target).await,
        Command::Goal { command, target } => admin::goal(command, &target).await,
        Command::Funnel { command, target } => admin::funnel(command, &target).await,
        Command::Rollup { args, target } => rollup::rollup(args, &target).await,
        Command::Share { command, target } => share::run(command, &target).await,
        Command::Report { command, target } => report::run(command, &target).await,
        Command::Alert { command, target } => alert::run(command, &target).await,
        Command::Segment { command, target } => saved::segment(command, &target).await,
        Command::Annotation { command, target } => saved::annotation(command, &target).await,
        Command::SetupToken { target } => accounts::setup_token(&target).await,
        Command::User { command, target } => accounts::user(command, &target).await,
        Command::Import { command, target } => history::import(command, &target).await,
        Command::Export { args, target } => history::export(args, &target).await,
    }
}
