//! Creating and changing sites and API keys from the command line, over
//! the same core builders as the console ([`tally_core::ingest::site::new_site`],
//! [`tally_core::ingest::site::SiteChange`], [`ApiKeyRecord::new`]), so both write
//! the same items. Used by `tally site` and `tally key`, and by the tests
//! that compare the two doors.

use anyhow::Context;
use tally_core::Millis;
use tally_core::account::KeyScope;
use tally_core::account::auth;
use tally_core::account::tag::TagKey;
use tally_core::ingest::site::{Site, SiteChange, new_site};
use tally_store::Store;
use tally_store::sites::ApiKeyRecord;

/// Random bytes from the system.
pub fn random<const N: usize>() -> anyhow::Result<[u8; N]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("no randomness available"))?;
    Ok(bytes)
}

/// The key that tags the keys and links the CLI makes
/// ([`tally_core::account::tag`]): from `TALLY_SALT_SECRET`, the deployment's
/// secret; without it they are made untagged (they work, through the
/// query function's failed-guess guard).
pub fn tag_key() -> Option<TagKey> {
    tally_store::env::tag_secret().as_ref().map(TagKey::derive)
}

/// Creates a site (`tally site create`): the site as stored and its first
/// API key (a read key of no console user, shown once; tagged with `tag`).
pub async fn create_site(
    store: &Store,
    id: Option<&str>,
    domains: &[String],
    time_zone: &str,
    settings: &SiteChange,
    tag: Option<&TagKey>,
    now: Millis,
) -> anyhow::Result<(Site, String)> {
    let site = new_site(id, domains, time_zone, settings, now)?;
    store.create_site(&site).await?;
    let key = create_key(store, &site.id, "created with the site", tag, now).await?;
    Ok((site, key))
}

/// Changes a site's settings (`tally site update`): read, change, write
/// unless ingest or the job changed the site's shard plan meanwhile; then
/// again from the new read.
pub async fn update_site(store: &Store, id: &str, change: &SiteChange) -> anyhow::Result<Site> {
    for _ in 0..5 {
        let mut site = store
            .site_consistent(id)
            .await?
            .with_context(|| format!("no site {id:?}"))?;
        change.apply(&mut site)?;
        if store.update_site(&site).await? {
            return Ok(site);
        }
    }
    anyhow::bail!("site {id:?} keeps changing; try again")
}

/// Changes a site's trusted proxy (`tally site proxy`): the site as
/// stored and the new secret when one was made (shown once).
pub async fn set_proxy(
    store: &Store,
    id: &str,
    change: &tally_core::ingest::proxy::ProxyChange,
    now: Millis,
) -> anyhow::Result<(Site, Option<String>)> {
    let fresh = tally_core::ingest::proxy::new_secret(&random::<24>()?);
    for _ in 0..5 {
        let mut site = store
            .site_consistent(id)
            .await?
            .with_context(|| format!("no site {id:?}"))?;
        let applied = change.apply(site.proxy.as_ref(), &fresh, now)?;
        site.proxy = applied.proxy;
        if store.update_site(&site).await? {
            return Ok((site, applied.secret));
        }
    }
    anyhow::bail!("site {id:?} keeps changing; try again")
}

/// Makes a new read key for a site, tagged with `tag` when given, and
/// stores its record; returns the key.
pub async fn create_key(
    store: &Store,
    site: &str,
    label: &str,
    tag: Option<&TagKey>,
    now: Millis,
) -> anyhow::Result<String> {
    create_scoped_key(store, site, label, tag, KeyScope::Read, now).await
}

/// As [`create_key`], of a chosen scope (`write`: it also records trusted
/// conversions).
pub async fn create_scoped_key(
    store: &Store,
    site: &str,
    label: &str,
    tag: Option<&TagKey>,
    scope: KeyScope,
    now: Millis,
) -> anyhow::Result<String> {
    let key = tally_core::account::tag::credential(tag, auth::KEY_PREFIX, site, &random::<20>()?);
    let record = ApiKeyRecord::new(&key, label, None, scope, now)?;
    store.put_api_key(site, &record).await?;
    Ok(key)
}
