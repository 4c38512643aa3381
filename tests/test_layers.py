"""The layers of the package, checked from the source (parsed with ``ast``; nothing is imported).

DESIGN.md, rules for contributors:

1. Imports point down the layers, at module top. A function-local import is for
   an optional heavy dependency or start-up speed, never for a package module.
2. No ``_private`` name crosses a module boundary, tests included.

Every import of every module of ``er_framework/`` and ``er_plugins/`` (module
level, inside functions, ``import x`` and ``from x import y``, relative or
absolute) is resolved to a module of the package and checked against
:data:`LAYERS`. ``tests/`` and ``benchmarks/`` are checked for private names.
The checker itself is tested on a small fake package with one offence of each
kind, so that a pass here means something.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The layers, lowest first: (layer, package, module patterns). A module imports
#: modules of lower layers, and of its own layer only within its own package.
#: ``pkg.*`` stands for the package ``pkg`` and every module below it.
LAYERS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (0, "kernels", ("er_framework.kernels.*",)),
    (1, "base", ("er_framework.errors", "er_framework.memory", "er_framework.data")),
    (
        2,
        "contract",
        (
            "er_framework",
            "er_framework.components",
            "er_framework.hookspecs",
            "er_framework.registry",
            "er_framework.normalize",
            "er_framework.testing",
            "er_framework.capabilities",
            "er_framework.testing_abilities",
            "er_framework.testing_support",
        ),
    ),
    (3, "io", ("er_framework.io.*",)),
    (4, "config", ("er_framework.config.*",)),
    (5, "report", ("er_framework.report.*",)),
    (6, "engine", ("er_framework.engine.*",)),
    (7, "executors", ("er_framework.executors.*",)),
    (8, "index", ("er_framework.index.*",)),
    (9, "evaluate", ("er_framework.evaluate.*",)),
    (9, "synth", ("er_framework.synth.*",)),
    (9, "api", ("er_framework.api",)),
    (10, "cli", ("er_framework.cli.*", "er_framework.__main__")),
)

#: ``er_plugins.*`` may import er_framework up to this layer (``io``: kernels, the contract, readers) and
#: each other; er_framework never imports er_plugins. A plugin is written against the contract: the
#: config, report, engine and executors are the framework's own (contract v2 tightened it from ``engine``).
PLUGINS_PACKAGE = "er_plugins"
PLUGINS_MAX_LAYER = 3

#: The group whose function-local imports of lower layers are fine: the
#: ``er`` command imports each verb's machinery only when the verb runs
#: (start-up speed of ``er --help``, ``er validate``), and nothing is above it.
LAZY_GROUP = "cli"

#: Further function-local imports of package modules, ``(importer, imported)``
#: -> the reason. Keep it short; each entry needs a reason a reviewer accepts.
FUNCTION_LOCAL_ALLOWED: dict[tuple[str, str], str] = {
    ("er_framework", "er_framework.api"): "the package's front door: er_framework.run / validate / Result are "
    "loaded on first use (module __getattr__), so that importing the contract stays light and does not load "
    "the executors; the one import that points up the layers (LAYER_EXCEPTIONS)",
}

#: Imports allowed to point up the layers, ``(importer, imported)``: function-local (listed above) or for
#: the type checker only.
LAYER_EXCEPTIONS = frozenset({("er_framework", "er_framework.api")})

PACKAGES = ("er_framework", PLUGINS_PACKAGE)
PRIVATE_CHECKED = ("er_framework", PLUGINS_PACKAGE, "tests", "benchmarks")


def layer_table() -> str:
    lines = ["layers, lowest first (a module imports lower layers, and its own layer only within its package):"]
    for layer, group, patterns in LAYERS:
        lines.append(f"  {layer:>2} {group:<10} {', '.join(patterns)}")
    lines.append(
        f"  {PLUGINS_PACKAGE}.* may import er_framework layers up to {PLUGINS_MAX_LAYER}; er_framework never imports {PLUGINS_PACKAGE}"
    )
    return "\n".join(lines)


def layer_of(module: str) -> tuple[int, str] | None:
    """``(layer, package)`` of an er_framework module, None when the table has no row for it."""
    for layer, group, patterns in LAYERS:
        for pattern in patterns:
            if pattern.endswith(".*"):
                base = pattern[:-2]
                if module == base or module.startswith(base + "."):
                    return layer, group
            elif module == pattern:
                return layer, group
    return None


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Source:
    path: Path  # relative to the root
    module: str  # dotted name ("" for a file outside the packages)
    is_package: bool
    tree: ast.Module


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    importer: str
    target: str  # the resolved module (first party) or the name as written
    first_party: bool
    function_local: bool
    type_checking: bool  # under ``if TYPE_CHECKING:`` (never runs)

    def where(self) -> str:
        return f"{self.path.as_posix()}:{self.line}"


def collect_sources(root: Path, top: str) -> list[Source]:
    """Every ``.py`` file under ``root/top``, parsed."""
    out = []
    for path in sorted((root / top).rglob("*.py")):
        rel = path.relative_to(root)
        parts = list(rel.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        module = ".".join(parts) if top in PACKAGES else ""
        out.append(Source(rel, module, is_package, ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk_imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement with (function_local, type_checking)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool, bool]] = []

    def visit(node: ast.AST, local: bool, checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, local, checking))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True, checking)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), local, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), local, checking)
            else:
                visit(child, local, checking)

    visit(tree, False, False)
    return found


def _from_base(source: Source, node: ast.ImportFrom) -> str:
    """The absolute module named by ``from <here> import ...``."""
    if node.level == 0:
        return node.module or ""
    package = source.module.split(".") if source.is_package else source.module.split(".")[:-1]
    if node.level > 1:
        package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def imports_of(source: Source, modules: set[str]) -> list[tuple[Import, tuple[str, ...]]]:
    """Each import resolved to a module, with the names a ``from`` import takes from it
    (a ``from pkg import sub`` of a submodule resolves to ``pkg.sub`` and takes no name)."""
    out: list[tuple[Import, tuple[str, ...]]] = []
    for node, local, checking in _walk_imports(source.tree):

        def make(target: str, line: int = node.lineno, local: bool = local, checking: bool = checking) -> Import:
            return Import(source.path, line, source.module or source.path.as_posix(), target, target in modules, local, checking)

        if isinstance(node, ast.Import):
            out.extend((make(alias.name), ()) for alias in node.names)
            continue
        base = _from_base(source, node)
        names: list[str] = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in modules:
                out.append((make(sub), ()))
            else:
                names.append(alias.name)
        if names:
            out.append((make(base), tuple(names)))
    return out


def module_names(sources: list[Source]) -> set[str]:
    return {s.module for s in sources if s.module}


def layer_offences(sources: list[Source], modules: set[str]) -> list[str]:
    """Imports that point up the layers, across packages of one layer, or into er_plugins."""
    offences = []
    for source in sources:
        if not source.module:
            continue
        for imp, _ in imports_of(source, modules):
            if not imp.first_party or imp.target == imp.importer:
                continue
            head = f"{imp.where()}: {imp.importer} imports {imp.target}"
            target_in_plugins = imp.target.split(".")[0] == PLUGINS_PACKAGE
            if source.module.split(".")[0] == PLUGINS_PACKAGE:
                if target_in_plugins:
                    continue
                found = layer_of(imp.target)
                if found is not None and found[0] > PLUGINS_MAX_LAYER:
                    offences.append(f"{head} (layer {found[0]} {found[1]} above the plugins' limit, layer {PLUGINS_MAX_LAYER})")
                continue
            if target_in_plugins:
                offences.append(f"{head} (er_framework never imports {PLUGINS_PACKAGE})")
                continue
            mine, theirs = layer_of(imp.importer), layer_of(imp.target)
            if mine is None or theirs is None:
                continue  # reported by test_every_module_has_a_layer
            if theirs[0] > mine[0] and not ((imp.function_local or imp.type_checking) and (imp.importer, imp.target) in LAYER_EXCEPTIONS):
                offences.append(f"{head} (layer {theirs[0]} {theirs[1]} above layer {mine[0]} {mine[1]})")
            elif theirs[0] == mine[0] and theirs[1] != mine[1]:
                offences.append(f"{head} (layer {theirs[0]}: {theirs[1]} is another package of the same layer as {mine[1]})")
    return offences


def function_local_offences(sources: list[Source], modules: set[str]) -> list[str]:
    """Function-local imports of package modules (rule 1), but for :data:`LAZY_GROUP` and the allow-list."""
    offences = []
    for source in sources:
        if not source.module:
            continue
        mine = layer_of(source.module)
        for imp, _ in imports_of(source, modules):
            if not (imp.first_party and imp.function_local) or imp.type_checking:
                continue
            if (imp.importer, imp.target) in FUNCTION_LOCAL_ALLOWED:
                continue
            theirs = layer_of(imp.target)
            if mine is not None and theirs is not None and mine[1] == LAZY_GROUP and theirs[0] < mine[0]:
                continue
            offences.append(
                f"{imp.where()}: {imp.importer} imports {imp.target} inside a function (a package module is imported at module top)"
            )
    return offences


def import_graph(sources: list[Source], modules: set[str]) -> dict[str, dict[str, Import]]:
    """Module-level imports that run (not function-local, not under TYPE_CHECKING) between package modules."""
    graph: dict[str, dict[str, Import]] = {m: {} for m in modules}
    for source in sources:
        if not source.module:
            continue
        for imp, _ in imports_of(source, modules):
            if imp.first_party and not imp.function_local and not imp.type_checking and imp.target != imp.importer:
                graph[source.module].setdefault(imp.target, imp)
    return graph


def cycles(graph: dict[str, dict[str, Import]]) -> list[list[Import]]:
    """One cycle (as its import statements) per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)

    found = []
    for component in components:
        members = set(component)
        start = component[0]
        # breadth-first from start back to start, inside the component: a shortest cycle through start
        parent: dict[str, str] = {}
        frontier = [start]
        done = False
        while frontier and not done:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w not in members:
                        continue
                    if w == start:
                        parent[start] = v
                        done = True
                        break
                    if w not in parent:
                        parent[w] = v
                        nxt.append(w)
                if done:
                    break
            frontier = nxt
        chain = []
        v = parent[start]
        while v != start:
            chain.append(v)
            v = parent[v]
        path = [start, *reversed(chain)]  # start -> ... -> parent[start] (-> start)
        edges = [graph[path[i - 1]][path[i]] for i in range(1, len(path))] + [graph[path[-1]][start]]
        found.append(edges)
    return found


def cycle_offences(sources: list[Source], modules: set[str]) -> list[str]:
    out = []
    for edges in cycles(import_graph(sources, modules)):
        chain = " -> ".join([e.importer for e in edges] + [edges[0].importer])
        steps = "; ".join(f"{e.where()}: {e.importer} imports {e.target}" for e in edges)
        out.append(f"import cycle {chain} ({steps})")
    return out


def private_offences(sources: list[Source], modules: set[str]) -> list[str]:
    """``from X import _name`` and ``module._name`` of another module's private name (rule 2)."""
    offences = []
    for source in sources:
        module_aliases: set[str] = set()
        for node, _, _ in _walk_imports(source.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and (alias.asname or "." not in alias.name):
                        module_aliases.add(alias.asname or alias.name)
            else:
                base = _from_base(source, node) if source.module else (node.module or "")
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        module_aliases.add(alias.asname or alias.name)
        for imp, names in imports_of(source, modules):
            for name in names:
                if is_private(name):
                    offences.append(f"{imp.where()}: {imp.importer} imports private {imp.target}.{name} (make it public in {imp.target})")
        for attr in ast.walk(source.tree):
            if (
                isinstance(attr, ast.Attribute)
                and isinstance(attr.value, ast.Name)
                and attr.value.id in module_aliases
                and is_private(attr.attr)
            ):
                offences.append(
                    f"{source.path.as_posix()}:{attr.lineno}: {source.module or source.path.as_posix()} "
                    f"uses private {attr.value.id}.{attr.attr}"
                )
    return offences


def fail_with(title: str, offences: list[str]) -> None:
    if offences:
        pytest.fail(f"{title} ({len(offences)}):\n" + "\n".join(offences) + "\n\n" + layer_table(), pytrace=False)


# -- the real tree ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree() -> tuple[list[Source], set[str]]:
    sources = [s for top in PACKAGES for s in collect_sources(ROOT, top)]
    return sources, module_names(sources)


def test_every_module_has_a_layer(tree: tuple[list[Source], set[str]]) -> None:
    modules = tree[1]
    assert len([m for m in modules if m.startswith("er_framework.kernels.")]) >= 5  # the walk found the tree
    missing = sorted(m for m in modules if m.split(".")[0] == "er_framework" and layer_of(m) is None)
    fail_with("modules without a row in LAYERS (add them to the table in tests/test_layers.py)", missing)


def test_imports_point_down_the_layers(tree: tuple[list[Source], set[str]]) -> None:
    fail_with("imports that point up the layers", layer_offences(*tree))


def test_no_import_cycles(tree: tuple[list[Source], set[str]]) -> None:
    fail_with("import cycles (something belongs in a lower module)", cycle_offences(*tree))


def test_package_modules_are_imported_at_module_top(tree: tuple[list[Source], set[str]]) -> None:
    fail_with("function-local imports of package modules", function_local_offences(*tree))
    for (importer, imported), reason in FUNCTION_LOCAL_ALLOWED.items():
        assert importer in tree[1] and imported in tree[1] and reason.strip(), (importer, imported)


def test_no_private_name_crosses_a_module() -> None:
    sources = [s for top in PRIVATE_CHECKED for s in collect_sources(ROOT, top)]
    assert any(s.path.parts[0] == "tests" for s in sources) and any(s.path.parts[0] == "benchmarks" for s in sources)
    fail_with("private names imported from another module", private_offences(sources, module_names(sources)))


# -- the checker on a fake tree with one offence of each kind ------------------------------------


FAKE = {
    "er_framework/__init__.py": "from er_framework.errors import ErError\n",
    "er_framework/errors.py": "class ErError(Exception): ...\n",
    "er_framework/data.py": "from .kernels.csr import TokenSets\nfrom . import errors\n",
    "er_framework/kernels/__init__.py": "from er_framework.kernels.csr import TokenSets\n",
    "er_framework/kernels/csr.py": (
        "import numpy as np\n"
        "from er_framework.errors import ErError\n"  # 0 -> 1: up
        "class TokenSets: ...\n"
    ),
    "er_framework/kernels/hashing.py": (
        "from typing import TYPE_CHECKING\n"
        "from .csr import TokenSets\n"
        "from er_framework.kernels.groups import _sort, sorted_unique\n"  # private
        "if TYPE_CHECKING:\n"
        "    from er_framework.kernels import groups\n"
        "def f():\n"
        "    from er_framework.kernels import csr\n"  # function-local
        "    import numpy.linalg\n"  # third party: fine
        "    return csr._private\n"  # private attribute
    ),
    "er_framework/kernels/groups.py": "from er_framework.kernels.hashing import TokenSets\n_sort = 1\nsorted_unique = 2\n",
    "er_framework/engine/__init__.py": "",
    "er_framework/engine/stages.py": "from ..executors import local\nimport er_plugins.core\n",
    "er_framework/executors/__init__.py": "",
    "er_framework/executors/local.py": "from er_framework.engine import stages\n",
    "er_framework/synth/__init__.py": "from er_framework.evaluate.metrics import score\n",
    "er_framework/evaluate/__init__.py": "",
    "er_framework/evaluate/metrics.py": "score = 1\n",
    "er_framework/cli/__init__.py": "",
    "er_framework/cli/main.py": "def main():\n    from er_framework.engine import stages\n    from er_framework.cli import other\n",
    "er_framework/cli/other.py": "",
    "er_framework/newthing.py": "",
    "er_plugins/__init__.py": "",
    "er_plugins/core.py": "from er_framework import ErError\nfrom er_plugins import docs\nfrom er_framework.executors.local import run\n",
    "er_plugins/docs.py": "from er_framework.engine.stages import x\n",
    "tests/test_x.py": "from er_framework.kernels.groups import _sort as sort\nfrom helpers import _help, ok\n",
    "tests/helpers.py": "_help = ok = 1\n",
}


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fake")
    for rel, text in FAKE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def fake_tree(root: Path) -> tuple[list[Source], set[str]]:
    sources = [s for top in PACKAGES for s in collect_sources(root, top)]
    return sources, module_names(sources)


def test_checker_resolves_relative_and_submodule_imports(fake: Path) -> None:
    sources, modules = fake_tree(fake)
    by_module = {s.module: s for s in sources}
    targets = {imp.target for imp, _ in imports_of(by_module["er_framework.data"], modules)}
    assert targets == {"er_framework.kernels.csr", "er_framework.errors"}
    found = {
        (imp.target, names, imp.function_local, imp.type_checking)
        for imp, names in imports_of(by_module["er_framework.kernels.hashing"], modules)
    }
    assert found == {
        ("typing", ("TYPE_CHECKING",), False, False),
        ("er_framework.kernels.csr", ("TokenSets",), False, False),
        ("er_framework.kernels.groups", ("_sort", "sorted_unique"), False, False),
        ("er_framework.kernels.groups", (), False, True),
        ("er_framework.kernels.csr", (), True, False),
        ("numpy.linalg", (), True, False),
    }
    assert layer_of("er_framework") == (2, "contract") and layer_of("er_framework.kernels") == (0, "kernels")
    assert layer_of("er_framework.__main__") == (10, "cli") and layer_of("er_framework.newthing") is None


def test_checker_finds_each_kind_of_offence(fake: Path) -> None:
    sources, modules = fake_tree(fake)
    assert sorted(layer_offences(sources, modules)) == sorted(
        [
            "er_framework/kernels/csr.py:2: er_framework.kernels.csr imports er_framework.errors (layer 1 base above layer 0 kernels)",
            (
                "er_framework/engine/stages.py:1: er_framework.engine.stages imports er_framework.executors.local "
                "(layer 7 executors above layer 6 engine)"
            ),
            "er_framework/engine/stages.py:2: er_framework.engine.stages imports er_plugins.core (er_framework never imports er_plugins)",
            (
                "er_framework/synth/__init__.py:1: er_framework.synth imports er_framework.evaluate.metrics "
                "(layer 9: evaluate is another package of the same layer as synth)"
            ),
            (
                "er_plugins/core.py:3: er_plugins.core imports er_framework.executors.local "
                "(layer 7 executors above the plugins' limit, layer 3)"
            ),
            "er_plugins/docs.py:1: er_plugins.docs imports er_framework.engine.stages (layer 6 engine above the plugins' limit, layer 3)",
        ]
    )
    assert function_local_offences(sources, modules) == [
        (
            "er_framework/cli/main.py:3: er_framework.cli.main imports er_framework.cli.other inside a function "
            "(a package module is imported at module top)"
        ),
        (
            "er_framework/kernels/hashing.py:7: er_framework.kernels.hashing imports er_framework.kernels.csr inside a function "
            "(a package module is imported at module top)"
        ),
    ]
    assert [o.split(" (")[0] for o in cycle_offences(sources, modules)] == [
        "import cycle er_framework.engine.stages -> er_framework.executors.local -> er_framework.engine.stages",
        "import cycle er_framework.kernels.groups -> er_framework.kernels.hashing -> er_framework.kernels.groups",
    ]
    private_sources = sources + collect_sources(fake, "tests")
    assert private_offences(private_sources, module_names(private_sources)) == [
        (
            "er_framework/kernels/hashing.py:3: er_framework.kernels.hashing imports private er_framework.kernels.groups._sort "
            "(make it public in er_framework.kernels.groups)"
        ),
        "er_framework/kernels/hashing.py:9: er_framework.kernels.hashing uses private csr._private",
        (
            "tests/test_x.py:1: tests/test_x.py imports private er_framework.kernels.groups._sort "
            "(make it public in er_framework.kernels.groups)"
        ),
        "tests/test_x.py:2: tests/test_x.py imports private helpers._help (make it public in helpers)",
    ]
