#!/usr/bin/env python3
"""Regenerate the traffic-source data files in crates/core/data/ from
fetched copies of their upstream lists.

Usage (from the repository root; each input is optional, only the files of
the inputs given are rewritten):

    python3 infra/scripts/gen_source_tables.py \
        --referers  PATH/referer-parser/resources/referers.yml \
        --custom    PATH/plausible-analytics/priv/custom_sources.json \
        --ga4       PATH/plausible-analytics/priv/ga4-source-categories.csv \
        --spam      PATH/referrer-spam-list/spammers.txt \
        --note "referer-parser b70173e (2025-11-25), ..."

Inputs (see crates/core/data/README.md for where each comes from and its
licence):
  * referers.yml  - snowplow-referer-parser's database (the one Plausible
                    reads through RefInspector): every `domains` entry of
                    every medium except `chatbot` (Plausible's copy has no
                    such section: chatgpt.com is "chatgpt.com" there; the
                    assistants are named in tally_sources.tsv instead).
  * custom_sources.json - Plausible's own host and utm_source aliases.
  * ga4-source-categories.csv - GA4's source categories as Plausible ships
                    them.
  * spammers.txt  - Matomo's referrer-spam list.

The outputs are plain text, sorted, one entry a line, `#` lines are
comments: tally-core's build script (crates/core/build.rs) turns them into
sorted static tables at compile time, so nothing is parsed at start-up.
Needs PyYAML for --referers (`pip install pyyaml`). No network access: fetch
the inputs first.
"""

import argparse
import csv
import json
import os
import sys

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "core", "data")

# referers.yml media kept (chatbot: see the module docstring).
MEDIA = ("unknown", "email", "social", "search", "paid")


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


def referers(path, note):
    import yaml  # only needed here

    with open(path, encoding="utf-8") as f:
        db = yaml.safe_load(f)
    rows = {}
    for medium in MEDIA:
        for name, entry in (db.get(medium) or {}).items():
            for domain in entry.get("domains") or []:
                domain = clean(str(domain)).lower()
                host, _, path_ = domain.partition("/")
                path_ = "/" + path_ if path_ else ""
                # The first entry of a host and path wins, as in the file.
                rows.setdefault((host, path_), (clean(str(name)), medium))
    out = [(h, p, n, m) for (h, p), (n, m) in sorted(rows.items())]
    write(
        "referers.tsv",
        [
            "Referrer host -> source name, from snowplow-referer-parser's referers.yml.",
            f"Source: {note or path}",
            "Regenerate: python3 infra/scripts/gen_source_tables.py --referers PATH (see README.md).",
            "Columns: host, path prefix (empty: any), source name, referer-parser medium.",
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
    p.add_argument("--referers")
    p.add_argument("--custom")
    p.add_argument("--ga4")
    p.add_argument("--spam")
    p.add_argument("--note", default="", help="provenance written into the files")
    a = p.parse_args()
    if not (a.referers or a.custom or a.ga4 or a.spam):
        p.error("give at least one input")
    if a.referers:
        referers(a.referers, a.note)
    if a.custom:
        custom(a.custom, a.note)
    if a.ga4:
        ga4(a.ga4, a.note)
    if a.spam:
        spam(a.spam, a.note)


if __name__ == "__main__":
    main()
