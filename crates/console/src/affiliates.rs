//! A site's affiliates: `GET|POST sites/{site}/affiliates`,
//! `DELETE sites/{site}/affiliates/{slug}` (served by
//! [`crate::collection`]). Listing is a read (as goals:
//! the terms are no one's personal data); adding and removing configure.
//! An affiliate is core's [`AffiliateSpec`] built as `tally affiliate add`
//! builds it (slug, `rate` or `fixed`, currency) and stored once per slug
//! (409 `affiliate_exists`). Removing one leaves the conversions already
//! attributed to it as stored: each keeps its slug and the commission
//! fixed when it was recorded; a new conversion naming the slug is then
//! refused (400 `unknown_affiliate`) until it is defined again.

use crate::collection::{Added, Call, Collection, CollectionStore, Removed};
use crate::error::ConsoleError;
use tally_core::account::caps::{self, Capped};
use tally_core::product::conversion::{self, Affiliate, AffiliateSpec, ConversionError};

impl From<ConversionError> for ConsoleError {
    fn from(e: ConversionError) -> Self {
        Self::new(400, e.code(), e.to_string())
    }
}

/// `sites/{site}/affiliates`.
pub struct Affiliates;

impl Collection for Affiliates {
    const NOUN: &'static str = "affiliate";
    const LISTED: &'static str = "affiliates";
    type Spec = AffiliateSpec;
    type Item = Affiliate;
    type Answer = Affiliate;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<Affiliate>, ConsoleError> {
        Ok(call.store.affiliates(call.site()).await?)
    }

    /// Stored once per slug (409 `affiliate_exists`).
    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: AffiliateSpec,
    ) -> Result<Added<Affiliate>, ConsoleError> {
        let store = call.store;
        let affiliate = spec.build(call.now)?;
        caps::check(
            Capped::Affiliates,
            store.affiliates(call.site()).await?.len(),
        )?;
        if !store.create_affiliate(call.site(), &affiliate).await? {
            return Err(ConsoleError::new(
                409,
                "affiliate_exists",
                format!(
                    "this call.site() already has an affiliate {:?}",
                    affiliate.slug
                ),
            ));
        }
        Ok(Added::new(
            affiliate.slug.clone(),
            "affiliate added",
            affiliate,
        ))
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        slug: &str,
    ) -> Result<Removed, ConsoleError> {
        let missing = || ConsoleError::not_found("affiliate_not_found", "no such affiliate");
        let slug = conversion::check_slug(slug).map_err(|_| missing())?;
        if !call
            .store
            .delete_affiliate(&call.permit.site.id, &slug)
            .await?
        {
            return Err(missing());
        }
        Ok(Removed::new(slug, "affiliate removed"))
    }
}
