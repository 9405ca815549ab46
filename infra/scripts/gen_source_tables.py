#!/usr/bin/env python3
"""Regenerate the traffic-source data files in crates/core/data/ from
fetched copies of their upstream lists.

Usage (from the repository root; each input is optional, only the files of
the inputs given are rewritten):

    python3 infra/scripts/gen_source_tables.py \
        --matomo    PATH/searchengine-and-social-list \
        --custom    PATH/plausible-analytics/priv/custom_sources.json \
        --ga4       PATH/plausible-analytics/priv/ga4-source-categories.csv \
        --spam      PATH/referrer-spam-list/spammers.txt \
        --note "matomo-org/searchengine-and-social-list 3b3a82dc83cd (2026-07-15), ..."

Inputs (see crates/core/data/README.md for where each comes from and its
licence):
  * searchengine-and-social-list - Matomo's search-engine and social-network
                    definitions (CC0-1.0): a checkout of the repository or
                    the npm package of the same name, read for its
                    SearchEngines.yml (every `urls` entry of every
                    configuration) and Socials.yml. AIAssistants.yml is left
                    out: Plausible names those hosts by its own tests (see
                    tally_sources.tsv), and unnamed assistants keep their
                    host, as in Plausible.
  * custom_sources.json - Plausible's own host and utm_source aliases.
  * ga4-source-categories.csv - GA4's source categories as Plausible ships
                    them.
  * spammers.txt  - Matomo's referrer-spam list.

The outputs are plain text, sorted, one entry a line, `#` lines are
comments: tally-core's build script (crates/core/build.rs) turns them into
sorted static tables at compile time, so nothing is parsed at start-up.
Needs PyYAML for --matomo (`pip install pyyaml`). No network access: fetch
the inputs first.
"""

import argparse
import csv
import json
import os
import sys

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "core", "data")

# Matomo's lists read, in this order (the first entry of a host and path
# wins), with the kind written beside each row.
MATOMO = (("SearchEngines.yml", "search"), ("Socials.yml", "social"))

def write(name, header, rows):
    path = os.path.normpath(os.path.join(DATA, name))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in header:
            f.write(f"# {line}\n" if line else "#\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    print(f"wrote {path}: {len(rows)} rows", file=sys.stderr)


def clean(text):
    text = text.strip()
    if not text or "\t" in text or "\n" in text:
        raise SystemExit(f"unusable value {text!r}")
    return text


def matomo_host(url):
    """A Matomo `urls` entry as (host, path prefix): lower case, without a
    leading `www.` (the classifier strips it from referrers and matches
    parent domains), `{}` kept as the country placeholder, Matomo's
    `android-app//APP/PATH` form read as the app's host and path."""
    url = clean(str(url)).lower()
    if url.startswith("android-app//"):
        url = url[len("android-app//") :]
    host, _, path_ = url.partition("/")
    if host.startswith("www.") and host.count(".") > 1:
        host = host[4:]
    path_ = "/" + path_ if path_ else ""
    if not host or any(c.isspace() for c in host):
        raise SystemExit(f"unusable host {url!r}")
    return host, path_


def matomo(path, note):
    import yaml  # only needed here
    from urllib.parse import unquote

    rows = {}
    for file, kind in MATOMO:
        with open(os.path.join(path, file), encoding="utf-8") as f:
            db = yaml.safe_load(f)
        for name, entry in db.items():
            # Names are written URL-encoded where a character is special to
            # Matomo's icon file names (`Google%2B`).
            name = clean(unquote(str(name)))
            # SearchEngines.yml: a list of configurations with `urls`;
            # Socials.yml: a list of hosts.
            urls = (
                [u for conf in entry for u in conf.get("urls") or []]
                if kind == "search"
                else entry
            )
            for url in urls:
                key = matomo_host(url)
                if key in rows and rows[key][0] != name:
                    print(
                        f"{file}: {key[0]}{key[1]} is {rows[key][0]!r} already, not {name!r}",
                        file=sys.stderr,
                    )
                rows.setdefault(key, (name, kind))
    out = [(h, p, n, k) for (h, p), (n, k) in sorted(rows.items())]
    write(
        "matomo_sources.tsv",
        [
            "Referrer host -> source name, from Matomo's search-engine and social lists",
            "(matomo-org/searchengine-and-social-list SearchEngines.yml, Socials.yml; CC0-1.0).",
            f"Source: {note or path}",
            "Regenerate: python3 infra/scripts/gen_source_tables.py --matomo PATH (see README.md).",
            "Columns: host (lower case, no www.; {} stands for a country code or",
            "country-code domain), path prefix (empty: any), source name, list (search, social).",
        ],
        out,
    )


def custom(path, note):
    with open(path, encoding="utf-8") as f:
        db = json.load(f)
    out = sorted((clean(k).lower(), clean(v)) for k, v in db.items())
    write(
        "plausible_sources.tsv",
        [
            "Plausible's custom sources (priv/custom_sources.json): a referrer host,",
            "an android-app:// referrer or a utm_source alias -> source name.",
            f"Source: {note or path}",
            "Regenerate: python3 infra/scripts/gen_source_tables.py --custom PATH (see README.md).",
        ],
        out,
    )


CATEGORIES = {
    "SOURCE_CATEGORY_SEARCH": "search",
    "SOURCE_CATEGORY_SOCIAL": "social",
    "SOURCE_CATEGORY_SHOPPING": "shopping",
    "SOURCE_CATEGORY_VIDEO": "video",
    "SOURCE_CATEGORY_EMAIL": "email",
    "SOURCE_CATEGORY_AI_ASSISTANTS": "ai",
}


def ga4(path, note):
    rows = {}
    with open(path, encoding="utf-8", newline="") as f:
        for source, category in csv.reader(f):
            if source == "source" and category == "source category":
                continue
            rows.setdefault(clean(source).lower(), CATEGORIES[clean(category)])
    write(
        "ga4_source_categories.tsv",
        [
            "GA4's default-channel source categories, as Plausible ships them",
            "(priv/ga4-source-categories.csv, from Google's published list).",
            f"Source: {note or path}",
            "Regenerate: python3 infra/scripts/gen_source_tables.py --ga4 PATH (see README.md).",
            "Columns: source (lower case), category (search, social, shopping, video).",
        ],
        sorted(rows.items()),
    )


def spam(path, note):
    hosts = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip().lower()
            if line and not line.startswith("#"):
                hosts.add(clean(line))
    write(
        "referrer_spam.txt",
        [
            "Referrer-spam hosts, Matomo's referrer-spam list (the list Plausible applies).",
            f"Source: {note or path}",
            "Regenerate: python3 infra/scripts/gen_source_tables.py --spam PATH (see README.md).",
        ],
        [(h,) for h in sorted(hosts)],
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--matomo", help="a checkout of searchengine-and-social-list")
    p.add_argument("--custom")
    p.add_argument("--ga4")
    p.add_argument("--spam")
    p.add_argument("--note", default="", help="provenance written into the files")
    a = p.parse_args()
    if not (a.matomo or a.custom or a.ga4 or a.spam):
        p.error("give at least one input")
    if a.matomo:
        matomo(a.matomo, a.note)
    if a.custom:
        custom(a.custom, a.note)
    if a.ga4:
        ga4(a.ga4, a.note)
    if a.spam:
        spam(a.spam, a.note)


if __name__ == "__main__":
    main()
