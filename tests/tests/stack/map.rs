//! ARCHITECTURE.md, the map, held to the code where a machine can check
//! it: every path it names exists, its crate table lists exactly the
//! workspace's crates, and its table of access patterns names every key
//! prefix `tally_core::keys` defines.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The section of a Markdown text under `heading`, up to the next `## `.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let rest = &text[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// `a/{b,c}.rs` as `a/b.rs` and `a/c.rs` (one brace group).
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => path[open + 1..close]
            .split(',')
            .map(|part| format!("{}{}{}", &path[..open], part.trim(), &path[close + 1..]))
            .collect(),
        _ => vec![path.to_owned()],
    }
}

/// Every repository path the text names: a word starting with one of the
/// project's top folders, up to the first character no path has.
fn paths_named(text: &str) -> BTreeSet<String> {
    const TOPS: [&str; 7] = [
        "crates/", "tests/", "infra/", "docs/", "e2e/", "fuzz/", ".ci/",
    ];
    let mut found = BTreeSet::new();
    for (at, _) in text.char_indices() {
        let rest = &text[at..];
        let starts_word = at == 0
            || !text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || "_/.-".contains(c));
        if !starts_word || !TOPS.iter().any(|t| rest.starts_with(t)) {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || "_/.-{},".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(['.', ',']);
        // `{site}`-style placeholders and `<door>` are no paths.
        if path.contains("{site}") || rest[end..].starts_with('<') || path.ends_with('-') {
            continue;
        }
        if path.contains('/') {
            found.insert(path.to_owned());
        }
    }
    found
}

#[test]
fn every_path_the_map_names_exists() {
    let map = read("ARCHITECTURE.md");
    let named = paths_named(&map);
    assert!(
        named.len() > 50,
        "the map names only {} paths: {named:?}",
        named.len()
    );
    let missing: Vec<String> = named
        .iter()
        .flat_map(|p| expand(p))
        .filter(|p| !root().join(p).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// `(package name, path)` of each workspace member, from the Cargo files.
fn workspace_crates() -> Vec<(String, String)> {
    let manifest = read("Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = "))
        .expect("a members list");
    members
        .trim_matches(['[', ']'])
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .map(|path| {
            let cargo = read(&format!("{path}/Cargo.toml"));
            let name = cargo
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .expect("a package name")
                .trim_matches('"')
                .to_owned();
            (name, path)
        })
        .collect()
}

#[test]
fn the_crate_table_lists_exactly_the_workspace_crates() {
    let map = read("ARCHITECTURE.md");
    let table = section(&map, "## Crates");
    let rows: BTreeSet<(String, String)> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (name, rest) = l.split_once("` (`")?;
            let (path, _) = rest.split_once("`)")?;
            Some((name.to_owned(), path.trim_end_matches('/').to_owned()))
        })
        .collect();
    let crates: BTreeSet<(String, String)> = workspace_crates().into_iter().collect();
    assert_eq!(crates.len(), 10, "the workspace's members: {crates:?}");
    assert_eq!(
        rows, crates,
        "ARCHITECTURE.md's crate table against Cargo.toml"
    );
}

#[test]
fn the_access_patterns_name_every_key_prefix() {
    let keys = read("crates/core/src/keys.rs");
    let prefixes: Vec<(String, String)> = keys
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|l| {
            let (name, rest) = l.split_once(": &str = \"")?;
            let (value, _) = rest.split_once('"')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect();
    assert!(
        prefixes.len() >= 30,
        "core::keys defines {} key strings: {prefixes:?}",
        prefixes.len()
    );
    let map = read("ARCHITECTURE.md");
    let table = section(&map, "## The table");
    let unnamed: Vec<&(String, String)> = prefixes
        .iter()
        .filter(|(_, value)| !table.contains(&format!("`{value}")) && !table.contains(value))
        .collect();
    assert!(
        unnamed.is_empty(),
        "key strings of core::keys the access-pattern table never names: {unnamed:?}"
    );
}
