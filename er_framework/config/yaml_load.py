"""Pass 1 of reading a job: the YAML file's text parsed into plain data, with a line for every YAML path.

Duplicate keys are problems (with both line numbers), and the file is read with
bounds (size, nesting, values, what aliases expand to, only plain tags): see
:func:`load_yaml`. The helpers below turn a YAML path into ``file:line``
(:func:`where_of`) and a :class:`~er_framework.errors.Problem` there
(:func:`problem_at`), for the later passes (:mod:`er_framework.config.spec`,
:mod:`er_framework.config.resolve`).
"""

from __future__ import annotations

import stat
import typing
from pathlib import Path
from typing import Any

import yaml

from er_framework.errors import ConfigError, Problem

YamlPath = tuple[str | int, ...]
#: the outermost alias on the way to a value: (its line, its anchor's name), or None
Via = tuple[int, str] | None


# ----------------------------------------------------------------------------
# pass 1: YAML with duplicate-key detection and line numbers


#: deepest nesting of mappings and lists accepted (a job needs five or six levels)
MAX_DEPTH = 50
#: values (scalars, lists, mappings) a job file may hold as written: a job has a few dozen; a 4 MB list of
#: numbers would be two million, and PyYAML's nodes of them over a gigabyte
MAX_NODES = 100_000
#: values an alias may add when it is expanded, over the whole file (its own nodes and text count once)
MAX_ALIAS_NODES = 10_000
MAX_ALIAS_CHARS = 1_000_000

_CORE = "tag:yaml.org,2002:"
#: tags a job's values may carry: the plain YAML types (implicit, or spelled out as ``!!str`` etc.)
_SCALAR_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
_MERGE_TAG = _CORE + "merge"


class _TooDeep(Exception):
    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__()
        self.mark = mark


class _TooMany(_TooDeep):
    pass


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses mappings and lists nested deeper than :data:`MAX_DEPTH`
    (PyYAML's composer recurses once per level: 10,000 ``[`` would overflow the stack) and more than
    :data:`MAX_NODES` values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        #: where each alias is used: (id of its parent node, list index or id of its key node) -> (line, name)
        self.alias_uses: dict[tuple[int, int, bool], tuple[int, str]] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent) and parent is not None and index is not None:
            event = self.peek_event()
            self.alias_uses[_child_key(parent, index)] = (event.start_mark.line + 1, str(event.anchor))
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)
            if self._nodes > MAX_NODES:
                raise _TooMany(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _child_key(parent: yaml.Node, index: Any) -> tuple[int, int, bool]:
    """A child's place in its parent: a list index, or the key node of a mapping value."""
    return (id(parent), index, True) if isinstance(index, int) else (id(parent), id(index), False)


def render_path(path: YamlPath) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def _render_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


def _too_deep(filename: str, line: int | None) -> Problem:
    return Problem(
        where=f"{filename}:{line}" if line else filename,
        message=f"mappings and lists nested more than {MAX_DEPTH} levels deep; a job file needs at most a few",
        fix="this is not a job file, or a generated one gone wrong: write the job out by hand (see configs/)",
    )


class _Refused(Exception):
    """A value the job loader will not build: stops the conversion with its problem."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def load_yaml(text: str, filename: str) -> tuple[Any, dict[YamlPath, int], list[Problem]]:
    """Parse YAML text into Python data plus a map YAML path -> line number.

    Duplicate keys are problems (the later value is not silently taken). The
    file is someone's text, possibly a stranger's (a job stored in an index
    is parsed again when the index is opened), so it is built with bounds:

    * only plain YAML values: a tag other than ``!!str``, ``!!int``,
      ``!!float``, ``!!bool``, ``!!null``, ``!!timestamp`` (e.g.
      ``!!python/object/apply``, ``!!binary``, ``!!set``, ``!custom``) is a
      problem naming the tag and its line, never silently dropped;
    * mappings and lists nested at most :data:`MAX_DEPTH` levels, at most
      :data:`MAX_NODES` values written;
    * anchors and aliases are kept for small re-use (``defaults: &d {...}``
      then ``<<: *d`` or ``*d``), since that is ordinary YAML a user may
      write, but what aliases add when expanded is capped
      (:data:`MAX_ALIAS_NODES` values, :data:`MAX_ALIAS_CHARS` characters
      over the file): a "billion laughs" file of nested aliases, which this
      line-tracking conversion would otherwise expand in full (gigabytes from
      a kilobyte), is refused after a few thousand values. Merge keys are
      expanded here, under the same count (PyYAML's own merge copies the
      merged entries at every level, exponential in the nesting of merges);
      an alias inside its own anchor is refused.
    """
    problems: list[Problem] = []
    lines: dict[YamlPath, int] = {}
    loader: _LineLoader | None = None
    try:
        loader = _LineLoader(text)
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = ord(exc.character) if isinstance(exc.character, str) else int(exc.character)
        char = "NUL" if code == 0 else f"#x{code:04x}"
        return (
            None,
            lines,
            [
                Problem(
                    where=f"{filename}:{line}",
                    message=f"the file holds a character YAML does not allow: {char} (column {column})",
                    fix="a job file is plain text: remove the character (is this the right file?)",
                )
            ],
        )
    except _TooMany as exc:
        return (
            None,
            lines,
            [
                Problem(
                    where=f"{filename}:{exc.mark.line + 1}" if exc.mark is not None else filename,
                    message=f"more than {MAX_NODES:,} values (a job holds a few dozen): not a job file",
                    fix="give the job's YAML file; data belongs in the sources' files",
                )
            ],
        )
    except _TooDeep as exc:
        return None, lines, [_too_deep(filename, exc.mark.line + 1 if exc.mark is not None else None)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line_text = f":{mark.line + 1}" if mark is not None else ""
        return (
            None,
            lines,
            [
                Problem(
                    where=f"{filename}{line_text}",
                    message=f"not valid YAML: {exc.problem or exc}",
                    fix="check indentation, colons and quotes around this line",
                )
            ],
        )
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    except RecursionError:  # pragma: no cover - the depth limit comes first
        return None, lines, [_too_deep(filename, None)]
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        return None, lines, [Problem(where=filename, message="the file is empty", fix="write a job (see configs/documents.yaml)")]
    assert loader is not None

    seen: set[int] = set()  # nodes converted once (a second visit is an alias being expanded)
    active: list[yaml.Node] = []  # the nodes being converted, outermost first
    budget = {"nodes": 0, "chars": 0}

    def at(n: yaml.Node) -> str:
        return f"{filename}:{n.start_mark.line + 1}"

    refused: list[Problem] = []  # values not built (the data is not returned; every one is reported)

    def refuse_tag(n: yaml.Node, path: YamlPath) -> None:
        refused.append(
            Problem(
                where=at(n),
                path=render_path(path),
                message=f"tag {_render_tag(n.tag)} is not allowed in a job file",
                fix="remove the tag: a job holds plain strings, numbers, booleans, lists and mappings",
            )
        )

    def scalar(n: yaml.ScalarNode, path: YamlPath) -> Any:
        if n.tag not in _SCALAR_TAGS:
            refuse_tag(n, path)
            return None
        try:
            return loader.construct_object(n, deep=True)
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            refused.append(
                Problem(
                    where=at(n),
                    path=render_path(path),
                    message=f"cannot read the value {n.value!r}: {exc}",
                    fix="quote it to keep it as text, or correct it",
                )
            )
            return None

    def count(n: yaml.Node, expanding: bool, via: Via) -> bool:
        """Count the node when it is reached through an alias; whether what is under it is too."""
        expanding = expanding or id(n) in seen
        seen.add(id(n))
        if expanding:
            budget["nodes"] += 1
            if isinstance(n, yaml.ScalarNode):
                budget["chars"] += len(n.value)
            if budget["nodes"] > MAX_ALIAS_NODES or budget["chars"] > MAX_ALIAS_CHARS:
                alias = f"the alias *{via[1]}" if via else "aliases (*name)"
                raise _Refused(
                    Problem(
                        where=f"{filename}:{via[0]}" if via else at(n),
                        message=f"{alias} expand{'s' if via else ''} to more than {MAX_ALIAS_NODES:,} values "
                        f"or {MAX_ALIAS_CHARS:,} characters in all (aliases of aliases: a 'billion laughs' file)",
                        fix="write the values out; aliases in a job file are for small re-use",
                    )
                )
        return expanding

    def child(parent: yaml.Node, index: Any, via: Via) -> Via:
        """The outermost alias on the way to a child (for messages)."""
        return via or loader.alias_uses.get(_child_key(parent, index))

    def merged(
        n: yaml.MappingNode, key_node: yaml.Node, value_node: yaml.Node, path: YamlPath, expanding: bool, via: Via
    ) -> dict[Any, Any]:
        """The entries a merge key ``<<: *a`` or ``<<: [*a, *b]`` brings (earlier mappings win)."""
        if isinstance(value_node, yaml.SequenceNode):
            via = child(n, key_node, via)
            count(value_node, expanding, via)
            sources = [(sub, child(value_node, i, via)) for i, sub in enumerate(value_node.value)]
        else:
            sources = [(value_node, child(n, key_node, via))]
        out: dict[Any, Any] = {}
        for sub, sub_via in reversed(sources):
            if not isinstance(sub, yaml.MappingNode):
                raise _Refused(
                    Problem(
                        where=at(sub),
                        path=render_path(path + ("<<",)),
                        message="a merge key '<<' takes a mapping or a list of mappings",
                        fix="write <<: *name where name anchors a mapping (&name {…})",
                    )
                )
            out.update(convert(sub, path, expanding, sub_via))
        return out

    def convert(n: yaml.Node, path: YamlPath, expanding: bool = False, via: Via = None) -> Any:
        if any(a is n for a in active):
            raise _Refused(
                Problem(
                    where=at(n),
                    path=render_path(path),
                    message="an alias refers to the mapping or list that holds it (a value that contains itself)",
                    fix="write the values out",
                )
            )
        if len(active) >= MAX_DEPTH:
            raise _Refused(_too_deep(filename, n.start_mark.line + 1))
        expanding = count(n, expanding, via)
        lines[path] = n.start_mark.line + 1
        active.append(n)
        try:
            if isinstance(n, yaml.MappingNode):
                if n.tag != _CORE + "map":
                    refuse_tag(n, path)
                return mapping(n, path, expanding, via)
            if isinstance(n, yaml.SequenceNode):
                if n.tag != _CORE + "seq":
                    refuse_tag(n, path)
                return [convert(v, path + (i,), expanding, child(n, i, via)) for i, v in enumerate(n.value)]
            assert isinstance(n, yaml.ScalarNode)
            return scalar(n, path)
        finally:
            active.pop()

    def mapping(n: yaml.MappingNode, path: YamlPath, expanding: bool, via: Via) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        explicit: dict[Any, int] = {}  # key -> line of its first definition
        for key_node, value_node in n.value:  # merged entries first: this mapping's own keys win
            if key_node.tag == _MERGE_TAG:
                out.update(merged(n, key_node, value_node, path, expanding, via))
        for key_node, value_node in n.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(
                        where=at(key_node),
                        path=render_path(path),
                        message=f"keys must be plain scalars, got a {'mapping' if isinstance(key_node, yaml.MappingNode) else 'list'}",
                    )
                )
                continue
            before = len(refused)
            key = scalar(key_node, path)
            if len(refused) > before:
                continue  # its tag is reported
            if not isinstance(key, (str, int, float, bool)):
                problems.append(Problem(where=at(key_node), path=render_path(path), message=f"keys must be plain scalars, got {key!r}"))
                continue
            if key in explicit:
                problems.append(
                    Problem(
                        where=at(key_node),
                        path=render_path(path + (str(key),)),
                        message=(f"duplicate key {key!r} (first defined on line {explicit[key]})"),
                        fix="keep one of the two; YAML would silently take the last one",
                    )
                )
                continue
            explicit[key] = key_node.start_mark.line + 1
            out[key] = convert(value_node, path + (str(key),), expanding, child(n, key_node, via))
        return out

    try:
        data = convert(node, ())
    except _Refused as exc:
        return None, lines, problems + refused + [exc.problem]
    except yaml.YAMLError as exc:
        return None, lines, [Problem(where=filename, message=f"not valid YAML: {exc}")]
    if refused:
        return None, lines, problems + refused
    if data is None:
        return (
            None,
            lines,
            [
                Problem(
                    where=filename, message="the file holds no job: its only value is null", fix="write a job (see configs/documents.yaml)"
                )
            ],
        )
    return data, lines, problems


# ----------------------------------------------------------------------------
# YAML paths -> file:line


def _line_of(lines: dict[YamlPath, int], path: YamlPath) -> int | None:
    p = tuple(path)
    while p:
        if p in lines:
            return lines[p]
        p = p[:-1]
    return lines.get(())


def where_of(filename: str, lines: dict[YamlPath, int], path: YamlPath) -> str:
    line = _line_of(lines, path)
    return f"{filename}:{line}" if line else filename


def problem_at(filename: str, lines: dict[YamlPath, int], path: YamlPath, message: str, fix: str = "") -> Problem:
    """A problem at a YAML path: ``file:line``, the rendered path, the message and the fix."""
    return Problem(where=where_of(filename, lines, path), path=render_path(path), message=message, fix=fix)


# ----------------------------------------------------------------------------
# the job file's text, and the error of a job found invalid


#: the largest job file read (a job is a few kilobytes; this keeps a wrong path, e.g. a data file, cheap to refuse)
MAX_JOB_BYTES = 4 << 20


def read_job_text(path: Path) -> str:
    """The text of a job file: UTF-8, at most :data:`MAX_JOB_BYTES`, not a device (``/dev/zero`` never ends)."""
    filename = str(path)
    try:
        if stat.S_ISCHR(path.stat().st_mode) or stat.S_ISBLK(path.stat().st_mode):
            fail([Problem(where=filename, message="this is a device, not a job file", fix="give the job's YAML file")])
        with path.open("rb") as fh:
            raw = fh.read(MAX_JOB_BYTES + 1)
    except FileNotFoundError:
        fail([Problem(where=filename, message="no such file", fix=f"looked at {path.resolve()}")])
    except OSError as exc:
        fail([Problem(where=filename, message=f"cannot read the file: {exc.strerror or exc}")])
    if len(raw) > MAX_JOB_BYTES:
        fail(
            [
                Problem(
                    where=filename,
                    message=f"larger than {MAX_JOB_BYTES >> 20} MB: not a job file",
                    fix="give the job's YAML file (a job is a few kilobytes)",
                )
            ]
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        fail(
            [
                Problem(
                    where=f"{filename}:{line}",
                    message=f"not UTF-8 text (byte {raw[exc.start]:#04x})",
                    fix="save the job as UTF-8 (is this the right file?)",
                )
            ]
        )


def fail(problems: list[Problem]) -> typing.NoReturn:
    """Raise the :class:`ConfigError` listing ``problems``: never an error of no problem.

    Every path that finds the job invalid must have said why; "invalid config:
    0 problems found" would be a bug here (the fuzz tests check it).
    """
    assert problems, "a job was found invalid without a problem to report"
    raise ConfigError(problems)
