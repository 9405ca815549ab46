//! The dimensions reports break down and filter by.

use crate::ingest::event::Event;
use serde::{Deserialize, Serialize};

/// A report dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Page path of each page view.
    Page,
    /// First page of a visit.
    EntryPage,
    /// Last page of a visit.
    ExitPage,
    /// Source name (Google, Direct, a UTM source, a host).
    Source,
    /// Referrer `host/path`.
    Referrer,
    /// Marketing channel.
    Channel,
    /// `utm_source`.
    UtmSource,
    /// `utm_medium`.
    UtmMedium,
    /// `utm_campaign`.
    UtmCampaign,
    /// `utm_content`.
    UtmContent,
    /// `utm_term`.
    UtmTerm,
    /// Device type.
    Device,
    /// Browser.
    Browser,
    /// Operating system.
    Os,
    /// Browser and its version (`Chrome 120.0`).
    BrowserVersion,
    /// Operating system and its version (`macOS 10.15`).
    OsVersion,
    /// Country (ISO 3166 alpha-2).
    Country,
    /// Region (CloudFront only).
    Region,
    /// City (CloudFront only).
    City,
    /// Screen size `WxH`.
    Screen,
    /// Custom event name.
    Event,
    /// Goal name.
    Goal,
    /// The page's host name (of the visit's first event).
    Hostname,
    /// A custom property of page views and custom events (`props:<key>`);
    /// the key travels beside the dimension (a filter's `prop`, a fold's
    /// `props`). Not in [`Dimension::ALL`]: it is not one dimension but one
    /// per key.
    Prop,
}

/// The longest custom property key (Plausible's limit, in bytes).
pub const MAX_PROP_KEY: usize = 300;

/// The property key of a dimension name `props:<key>` (or Plausible's
/// `event:props:<key>`), when it is one and the key is well formed.
pub fn prop_key(name: &str) -> Option<&str> {
    let key = name
        .strip_prefix("props:")
        .or_else(|| name.strip_prefix("event:props:"))?;
    (!key.is_empty() && key.len() <= MAX_PROP_KEY && !key.chars().any(char::is_control))
        .then_some(key)
}

/// What a dimension describes, which decides how filters on it apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A property of the visit (its first event).
    Session,
    /// A property of each page view.
    PageView,
    /// A property of each custom event.
    Custom,
    /// Goal conversions.
    Goal,
    /// A property of each page view and custom event.
    Prop,
}

impl Dimension {
    /// Every dimension.
    pub const ALL: [Dimension; 23] = [
        Self::Page,
        Self::EntryPage,
        Self::ExitPage,
        Self::Source,
        Self::Referrer,
        Self::Channel,
        Self::UtmSource,
        Self::UtmMedium,
        Self::UtmCampaign,
        Self::UtmContent,
        Self::UtmTerm,
        Self::Device,
        Self::Browser,
        Self::Os,
        Self::BrowserVersion,
        Self::OsVersion,
        Self::Country,
        Self::Region,
        Self::City,
        Self::Screen,
        Self::Event,
        Self::Goal,
        Self::Hostname,
    ];

    /// Whether a breakdown counts the visits without a value in a row of
    /// their own, named `""`: Plausible's `(not set)` and `Direct / None`
    /// rows of the referrer and UTM tags. Tally's own API does not show it.
    pub fn blank_row(self) -> bool {
        matches!(
            self,
            Self::Referrer
                | Self::UtmSource
                | Self::UtmMedium
                | Self::UtmCampaign
                | Self::UtmContent
                | Self::UtmTerm
        )
    }

    /// The canonical (singular) name used in filters and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::EntryPage => "entry_page",
            Self::ExitPage => "exit_page",
            Self::Source => "source",
            Self::Referrer => "referrer",
            Self::Channel => "channel",
            Self::UtmSource => "utm_source",
            Self::UtmMedium => "utm_medium",
            Self::UtmCampaign => "utm_campaign",
            Self::UtmContent => "utm_content",
            Self::UtmTerm => "utm_term",
            Self::Device => "device",
            Self::Browser => "browser",
            Self::Os => "os",
            Self::BrowserVersion => "browser_version",
            Self::OsVersion => "os_version",
            Self::Country => "country",
            Self::Region => "region",
            Self::City => "city",
            Self::Screen => "screen",
            Self::Event => "event",
            Self::Goal => "goal",
            Self::Hostname => "hostname",
            Self::Prop => "props",
        }
    }

    /// Parses a canonical name or a plural alias (`pages`, `countries`,
    /// `screen_sizes`, `events`, …).
    pub fn parse(name: &str) -> Option<Self> {
        let name = match name {
            "pages" => "page",
            "entry_pages" | "entries" => "entry_page",
            "exit_pages" | "exits" => "exit_page",
            "sources" => "source",
            "referrers" => "referrer",
            "channels" => "channel",
            "devices" => "device",
            "browsers" => "browser",
            "browser_versions" => "browser_version",
            "os_versions" => "os_version",
            "countries" => "country",
            "regions" => "region",
            "cities" => "city",
            "screens" | "screen_sizes" | "screen_size" => "screen",
            "events" | "custom_events" => "event",
            "goals" => "goal",
            "hostnames" | "host" => "hostname",
            other => other,
        };
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// For a version dimension, the dimension it versions (its values
    /// start with that one's: `Chrome 120.0` of `Chrome`).
    pub fn versioned(self) -> Option<Self> {
        match self {
            Self::BrowserVersion => Some(Self::Browser),
            Self::OsVersion => Some(Self::Os),
            _ => None,
        }
    }

    /// What the dimension describes.
    pub fn level(self) -> Level {
        match self {
            Self::Page => Level::PageView,
            Self::Event => Level::Custom,
            Self::Goal => Level::Goal,
            Self::Prop => Level::Prop,
            _ => Level::Session,
        }
    }

    /// The value of a session-level dimension read from an event (the
    /// visit's first event); `None` when the event lacks it. Entry and exit
    /// pages and event-level dimensions are not read here.
    pub fn of_event(self, e: &Event) -> Option<&str> {
        match self {
            Self::Page => Some(&e.path),
            Self::Source => Some(&e.source),
            Self::Referrer => e.referrer.as_deref(),
            Self::Channel => Some(e.channel.as_str()),
            Self::UtmSource => e.utm_source.as_deref(),
            Self::UtmMedium => e.utm_medium.as_deref(),
            Self::UtmCampaign => e.utm_campaign.as_deref(),
            Self::UtmContent => e.utm_content.as_deref(),
            Self::UtmTerm => e.utm_term.as_deref(),
            Self::Device => Some(e.device.as_str()),
            Self::Browser => Some(&e.browser),
            Self::Os => Some(&e.os),
            Self::BrowserVersion => e.browser_version.as_deref(),
            Self::OsVersion => e.os_version.as_deref(),
            Self::Country => e.country.as_deref(),
            Self::Region => e.region.as_deref(),
            Self::City => e.city.as_deref(),
            Self::Screen => e.screen.as_deref(),
            Self::Event => e.name.as_deref(),
            Self::Hostname => Some(&e.host),
            Self::EntryPage | Self::ExitPage | Self::Goal | Self::Prop => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_parse() {
        for d in Dimension::ALL {
            assert_eq!(Dimension::parse(d.name()), Some(d));
        }
        assert_eq!(Dimension::parse("countries"), Some(Dimension::Country));
        assert_eq!(Dimension::parse("screen_sizes"), Some(Dimension::Screen));
        assert_eq!(Dimension::parse("pages"), Some(Dimension::Page));
        assert_eq!(Dimension::parse("shoe_size"), None);
        assert_eq!(Dimension::parse("props"), None, "a property needs its key");
    }

    #[test]
    fn property_names_carry_their_key() {
        assert_eq!(prop_key("props:plan"), Some("plan"));
        assert_eq!(prop_key("event:props:plan"), Some("plan"));
        assert_eq!(prop_key("props:"), None);
        assert_eq!(prop_key(&format!("props:{}", "k".repeat(301))), None);
        assert_eq!(prop_key("plan"), None);
    }
}
