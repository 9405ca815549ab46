//! What people save on a site under `SITE#{site}`: saved segments
//! (`SEGMENT#{id}`, read together by prefix, at most 100) and annotations
//! (`ANNOTATION#{date}#{id}`, a period's read by one Query between two
//! keys).

use crate::Store;
use crate::error::StoreError;
use crate::item::from_item;
use crate::query::SortKeys;
use tally_core::keys;
use tally_core::product::annotation::Annotation;
use tally_core::product::saved_segment::SavedSegment;

impl Store {
    /// Stores a saved segment (replacing one with the same id).
    pub async fn put_saved_segment(
        &self,
        site: &str,
        segment: &SavedSegment,
    ) -> Result<(), StoreError> {
        self.put_named(site, keys::saved_segment_sk(&segment.id), segment)
            .await
    }

    /// Every saved segment of a site (personal ones too: callers show
    /// each reader what [`SavedSegment::visible_to`] lets them see).
    pub async fn saved_segments(&self, site: &str) -> Result<Vec<SavedSegment>, StoreError> {
        self.named(site, keys::SAVED_SEGMENT_PREFIX).await
    }

    /// Removes a saved segment.
    pub async fn delete_saved_segment(&self, site: &str, id: &str) -> Result<(), StoreError> {
        self.delete_named(site, keys::saved_segment_sk(id)).await
    }

    /// Stores an annotation.
    pub async fn put_annotation(&self, site: &str, note: &Annotation) -> Result<(), StoreError> {
        self.put_named(site, keys::annotation_sk(&note.date, &note.id), note)
            .await
    }

    /// A site's annotations dated `from` to `to` (`YYYY-MM-DD`, both
    /// included; `None` for every one), in date order.
    pub async fn annotations(
        &self,
        site: &str,
        days: Option<(&str, &str)>,
    ) -> Result<Vec<Annotation>, StoreError> {
        let pk = keys::site_pk(site);
        let items = match days {
            None => {
                self.query_items(&pk, SortKeys::Prefix(keys::ANNOTATION_PREFIX))
                    .await?
            }
            Some((from, to)) => {
                let low = format!("{}{from}", keys::ANNOTATION_PREFIX);
                // `~` sorts after every id character.
                let high = format!("{}{to}#~", keys::ANNOTATION_PREFIX);
                self.query_items(&pk, SortKeys::Between(&low, &high))
                    .await?
            }
        };
        items.into_iter().map(from_item).collect()
    }

    /// Removes an annotation.
    pub async fn delete_annotation(&self, site: &str, note: &Annotation) -> Result<(), StoreError> {
        self.delete_named(site, keys::annotation_sk(&note.date, &note.id))
            .await
    }
}
