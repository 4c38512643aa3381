"""The persistent index: ``open_index``, ``build_index`` (see :mod:`er_framework.index.store`)."""

from er_framework.index.build import build_index, open_index, records_from_texts
from er_framework.index.sqlite import FORMAT_VERSION
from er_framework.index.store import Index, Match

__all__ = ["FORMAT_VERSION", "Index", "Match", "build_index", "open_index", "records_from_texts"]
