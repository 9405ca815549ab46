use super::*;

#[test]
fn names_map_onto_the_one_vocabulary_both_ways() {
    for (name, m) in METRICS.into_iter().chain(VITAL_METRICS) {
        assert_eq!(metric(name), Some(m));
        assert_eq!(metric_name(m), name);
    }
    assert_eq!(
        metric("cls_p75"),
        Some(Metric::Vital(
            crate::ingest::vitals::Vital::Cls,
            crate::engine::query::metric::VitalStat::P75
        ))
    );
    assert_eq!(metric("lcp_good"), None, "percentiles only");
    assert_eq!(metric("events"), Some(Metric::Events), "views and events");
    assert_eq!(metric("revenue"), None);
    assert_eq!(metric_name(Metric::CustomEvents), "");
}

#[test]
fn dimensions_keep_their_plausible_names() {
    for name in [
        "time:hour",
        "time:day",
        "time:week",
        "time:month",
        "event:page",
        "event:goal",
        "event:name",
        "event:hostname",
        "visit:entry_page",
        "visit:browser_version",
        "visit:os_version",
        "visit:source",
        "visit:screen",
        "event:props:plan",
    ] {
        assert_eq!(dimension_name(&dimension(name).unwrap()), name);
    }
    assert_eq!(
        dimension("time").unwrap(),
        QueryDimension::Time(Interval::Day)
    );
    assert_eq!(
        dimension("visit:country_name").unwrap_err().message,
        "Invalid dimension \"visit:country_name\": not supported by Tally"
    );
}

#[test]
fn instants_are_written_with_the_sites_offset() {
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let winter = crate::time::zone::utc_midnight(time::macros::date!(2026 - 11 - 10)) + 8 * HOUR_MS;
    assert_eq!(zone_datetime(&zone, winter), "2026-11-10T09:00:00+01:00");
    let summer =
        crate::time::zone::utc_midnight(time::macros::date!(2026 - 07 - 10)) + 8 * HOUR_MS + 5_000;
    assert_eq!(zone_datetime(&zone, summer), "2026-07-10T10:00:05+02:00");
    let ny = Zone::parse("America/New_York").unwrap();
    assert_eq!(zone_datetime(&ny, winter), "2026-11-10T03:00:00-05:00");
}
