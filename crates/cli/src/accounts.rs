//! `tally setup-token` and `tally user create`: the console's first owner
//! and its users from the command line (issue 21).

use crate::Target;
use crate::admin::{connect, now_ms};
use anyhow::Context;
use std::io::{Read, Write};
use tally_core::account::{Membership, Role, SetupToken, User, password, record, token};
use tally_store::Store;

/// `tally user …`.
#[derive(clap::Subcommand, Debug)]
pub enum UserCommand {
    /// Create a console user; the password is read from standard input.
    Create {
        /// The user's email.
        #[arg(long)]
        email: String,
        /// Make the user the instance owner (only if there is none).
        #[arg(long)]
        instance_owner: bool,
    },
}

fn random<const N: usize>() -> anyhow::Result<[u8; N]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no randomness available"))?;
    Ok(bytes)
}

/// `tally setup-token`: prints a single-use token, good for 24 hours, that
/// creates the instance owner in the console (`POST /api/console/setup`).
pub async fn setup_token(target: &Target) -> anyhow::Result<()> {
    let store = connect(target).await;
    let mut out = std::io::stdout().lock();
    if store.instance_owner().await?.is_some() {
        writeln!(
            out,
            "this instance has an owner already: sign in, or add users with `tally user create`"
        )?;
        return Ok(());
    }
    let t = issue_setup_token(&store, now_ms()).await?;
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "single use, valid for 24 hours: open the console and set up the instance owner with it"
    )?;
    Ok(())
}

/// Stores a new setup token made at `now` and returns it.
pub async fn issue_setup_token(store: &Store, now: i64) -> anyhow::Result<String> {
    let t = token::setup_token(&random::<20>()?);
    store
        .put_setup_token(&SetupToken::new(token::hash_token(&t), now))
        .await?;
    Ok(t)
}

/// `tally user …`.
pub async fn user(command: UserCommand, target: &Target) -> anyhow::Result<()> {
    match command {
        UserCommand::Create {
            email,
            instance_owner,
        } => {
            let mut password = String::new();
            std::io::stdin()
                .read_to_string(&mut password)
                .context("reading the password from standard input")?;
            let password = password.trim_end_matches(['\r', '\n']).to_owned();
            let store = connect(target).await;
            let user = create_user(&store, &email, &password, instance_owner, now_ms()).await?;
            writeln!(
                std::io::stdout().lock(),
                "user created: {} {}",
                user.id,
                user.email
            )?;
            Ok(())
        }
    }
}

/// Creates a user (the instance owner when asked and there is none yet).
pub async fn create_user(
    store: &Store,
    email: &str,
    password: &str,
    instance_owner: bool,
    now: i64,
) -> anyhow::Result<User> {
    let email = record::valid_email(email).context("that is not an email address")?;
    let phc = password::hash(password, &random::<16>()?)?;
    let user = User {
        id: token::user_id_from_bytes(&random::<8>()?),
        email,
        password: phc,
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        instance_owner,
        created: now,
        known_devices: Vec::new(),
    };
    if instance_owner && store.instance_owner().await?.is_some() {
        anyhow::bail!("this instance has an owner already");
    }
    if !store.create_user(&user).await? {
        anyhow::bail!("a user with this email exists already");
    }
    if instance_owner && !store.claim_instance_owner(&user.id).await? {
        anyhow::bail!("this instance got an owner meanwhile; the user was created without it");
    }
    Ok(user)
}

/// Makes a user a member of a site.
pub async fn add_member(store: &Store, site: &str, user: &User, role: Role) -> anyhow::Result<()> {
    store
        .put_membership(&Membership {
            site: site.to_owned(),
            uid: user.id.clone(),
            role,
            email: user.email.clone(),
        })
        .await?;
    Ok(())
}
