//! Replays the committed fuzz corpus and regression inputs through the
//! same checks the `cargo fuzz` targets run (`fuzz/fuzz_targets/checks.rs`),
//! so every input a fuzzing run kept, and every crash it found, is checked
//! again by `cargo test --workspace` without nightly Rust or libFuzzer.

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

/// Runs `check` on every file of the target's corpus and regressions and
/// returns how many inputs were replayed.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails its fuzz check", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn collect_corpus_passes_its_fuzz_checks() {
    let n = replay("collect", checks::collect);
    assert!(
        n > 1_000,
        "only {n} collect inputs: is the corpus committed?"
    );
}

#[test]
fn query_params_corpus_and_past_crashes_pass_their_fuzz_checks() {
    let n = replay("query_params", checks::query_params);
    assert!(
        n > 1_000,
        "only {n} query_params inputs: is the corpus committed?"
    );
}

#[test]
fn segment_corpus_passes_its_fuzz_checks() {
    let n = replay("segment", checks::segment);
    assert!(n > 100, "only {n} segment inputs: is the corpus committed?");
}
