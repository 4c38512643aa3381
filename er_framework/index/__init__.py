"""The persistent index: ``open_index``, ``build_index`` (see :mod:`er_framework.index.store`)."""

from er_framework.index.store import FORMAT_VERSION, Index, Match, build_index, open_index, records_from_texts

__all__ = ["FORMAT_VERSION", "Index", "Match", "build_index", "open_index", "records_from_texts"]
