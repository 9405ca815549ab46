//! The per-instance site cache: a site added a moment ago is found within
//! the miss lifetime, by id (`/collect`) and by domain (Plausible's
//! `/api/event`), while an absence is still answered from the cache inside
//! it (a flood of one bogus id is one read per lifetime).

#![allow(clippy::unwrap_used)]

use std::time::Duration;
use tally_core::ingest::site::Site;
use tally_store::sites::SiteCache;
use tally_tests::Harness;

const MISS: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_site_added_after_a_miss_is_found_once_the_miss_expires() {
    let h = Harness::start().await;
    let (store, counter) = h.second_store().await;
    let cache = SiteCache::with_ttls(Duration::from_secs(60), MISS);
    assert!(cache.site(&store, "fresh").await.unwrap().is_none());
    assert!(
        cache
            .site_for_domain(&store, "fresh.example")
            .await
            .unwrap()
            .is_none()
    );
    let site = Site::new("fresh", &["fresh.example".into()], "UTC", 0).unwrap();
    h.store.create_site(&site).await.unwrap();

    // Within the miss lifetime the absence is the cache's answer: no read.
    counter.reset();
    assert!(cache.site(&store, "fresh").await.unwrap().is_none());
    assert!(
        cache
            .site_for_domain(&store, "fresh.example")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(counter.total(), 0, "{:?}", counter.by_operation());

    tokio::time::sleep(MISS + Duration::from_millis(50)).await;
    assert_eq!(
        cache.site(&store, "fresh").await.unwrap().unwrap().id,
        "fresh"
    );
    assert_eq!(
        cache
            .site_for_domain(&store, "fresh.example")
            .await
            .unwrap()
            .unwrap()
            .id,
        "fresh"
    );
    // Found, the site is trusted for the full lifetime: no more reads.
    counter.reset();
    tokio::time::sleep(MISS + Duration::from_millis(50)).await;
    assert!(cache.site(&store, "fresh").await.unwrap().is_some());
    assert!(
        cache
            .site_for_domain(&store, "fresh.example")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(counter.total(), 0, "{:?}", counter.by_operation());
}
