"""Plugin manager: built-ins and third-party plugins, loaded the same way.

Every plugin — the built-in ones included — is a module registered under the
entry-point group ``er_framework``. Loading is explicit and can be controlled:

* ``ER_FRAMEWORK_DISABLE_PLUGIN_AUTOLOAD=1`` loads only the plugins shipped in
  the ``er-framework`` distribution itself (plus those named in
  ``ER_FRAMEWORK_PLUGINS``);
* ``ER_FRAMEWORK_PLUGINS=pkg.module,other.module`` imports and registers these
  modules explicitly (useful in tests and for plugins that are not installed);
* ``ER_FRAMEWORK_BLOCK_PLUGINS=name1,name2`` (or the ``block`` argument) blocks
  plugins by entry-point name, so that their hooks never run.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata as md
import os
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from er_framework.components import FAMILIES, FIELD_REF, Component, Family, Params
from er_framework.errors import ConfigError, PluginError, Problem, choices_text, did_you_mean
from er_framework.hookspecs import PROJECT, ErSpecs

ENTRY_POINT_GROUP = "er_framework"
DISTRIBUTION = "er-framework"
ENV_DISABLE = "ER_FRAMEWORK_DISABLE_PLUGIN_AUTOLOAD"
ENV_PLUGINS = "ER_FRAMEWORK_PLUGINS"
ENV_BLOCK = "ER_FRAMEWORK_BLOCK_PLUGINS"


@dataclass(frozen=True)
class PluginInfo:
    """Where a plugin came from."""

    name: str
    module: str
    distribution: str
    version: str


@dataclass(frozen=True)
class ComponentInfo:
    """A registered component class and the plugin that provided it."""

    family: str
    name: str
    cls: type[Component]
    plugin: PluginInfo


@dataclass
class Registry:
    """Components by family and name, with their providers."""

    plugins: list[PluginInfo] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    components: dict[str, dict[str, ComponentInfo]] = field(default_factory=lambda: {f: {} for f in FAMILIES})
    manager: pluggy.PluginManager | None = None

    def names(self, family: str) -> list[str]:
        return sorted(self.components[family])

    def get(self, family: str, name: str) -> ComponentInfo:
        try:
            return self.components[family][name]
        except KeyError:
            installed = self.names(family)
            raise PluginError(
                Problem(
                    where="",
                    message=f"no {family} named {name!r}",
                    fix=f"{did_you_mean(name, installed)}installed: {choices_text(installed)}",
                )
            ) from None


@dataclass(frozen=True)
class ExecutorEntry:
    """A built-in executor's registration: its run function and the model of its options, each as
    ``"module:name"`` (nothing is imported until a job names the executor)."""

    run: str
    params: str


#: the built-in executors: name (the YAML ``executor.type``) -> where its run function and options model are
BUILTIN_EXECUTORS: dict[str, ExecutorEntry] = {
    "local": ExecutorEntry("er_framework.executors.local:run_local", "er_framework.config.executor_params:LocalParams"),
    "dask": ExecutorEntry("er_framework.executors.dask:run_dask", "er_framework.config.executor_params:DaskParams"),
}
#: entry-point group of third-party executors (name -> ``module:function``, the run function; its options model
#: is the function's ``Params`` attribute)
EXECUTOR_GROUP = "er_framework.executors"
#: how a third party registers an executor (in messages)
EXECUTOR_ENTRY_POINT = f'group {EXECUTOR_GROUP}, NAME = "package.module:function"'


def executor_table() -> dict[str, str]:
    """Every executor by name: the built-ins and those installed through :data:`EXECUTOR_GROUP`.

    An installed executor may not take a built-in's name. The table holds
    ``"module:function"`` strings only: nothing is imported until a job runs
    on that executor (:func:`er_framework.executors.get_executor`).
    """
    table = {name: entry.run for name, entry in BUILTIN_EXECUTORS.items()}
    for ep in md.entry_points(group=EXECUTOR_GROUP):
        if ep.name in BUILTIN_EXECUTORS:
            dist, _ = _dist_of(ep)
            raise PluginError(
                Problem(
                    where=f"entry point {ep.name} = {ep.value} (group {EXECUTOR_GROUP}, {dist})",
                    message=f"an installed executor takes the built-in name {ep.name!r}",
                    fix="register it under another name",
                )
            )
        table[ep.name] = ep.value
    return table


def load_executor_object(name: str, target: str) -> Any:
    """The object ``target`` (``"module:name"``) of executor ``name``, imported now; a :class:`PluginError`
    naming the executor when it cannot be."""
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise PluginError(
            Problem(
                where=f"executor {name!r} ({target})",
                message=f"cannot be loaded: {type(exc).__name__}: {exc}",
                fix=f"install the package that provides it, or fix its entry point ({EXECUTOR_ENTRY_POINT})",
            )
        ) from None


def executor_params_model(name: str) -> type[Params]:
    """The model of executor ``name``'s options: the keys of ``executor: {type: NAME, ...}`` besides ``type``.

    A built-in's is named in :data:`BUILTIN_EXECUTORS` (a light module: Dask
    is not imported); an installed executor's is the ``Params`` attribute of
    the run function its entry point names (``run.Params = MyOptions``), and an
    executor without one takes no options. The model is a subclass of
    :class:`~er_framework.components.Params` that forbids unknown keys, or a
    :class:`PluginError` says what is wrong with it.
    """
    entry = BUILTIN_EXECUTORS.get(name)
    if entry is not None:
        model = load_executor_object(name, entry.params)
        target = entry.params
    else:
        table = executor_table()
        if name not in table:
            raise ConfigError(
                Problem(
                    where="executor.type",
                    message=f"no executor {name!r}",
                    fix=f"{did_you_mean(name, table)}installed executors: {choices_text(table)}",
                )
            )
        target = table[name]
        model = getattr(load_executor_object(name, target), "Params", Params)
    if not (isinstance(model, type) and issubclass(model, Params)) or model.model_config.get("extra") != "forbid":
        raise PluginError(
            Problem(
                where=f"executor {name!r} ({target})",
                message=f"its options model {model!r} is not a subclass of er_framework.Params that forbids unknown keys",
                fix="derive it from er_framework.Params (and keep model_config's extra='forbid')",
            )
        )
    return model


def _env_list(var: str) -> list[str]:
    return [p.strip() for p in os.environ.get(var, "").split(",") if p.strip()]


def _autoload_disabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no")


def _dist_of(ep: md.EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ("?", "?")
    return _dist_name_version(dist)


@functools.lru_cache(maxsize=64)
def _dist_name_version(dist: md.Distribution) -> tuple[str, str]:
    """Name and version of a distribution, its metadata parsed once (er-framework's METADATA holds the
    whole README: parsing it for each of its eight entry points cost ~15 ms of `er validate`)."""
    meta = dist.metadata
    return (meta["Name"] or "?", meta["Version"] or "?")


def build_registry(
    *,
    block: Sequence[str] = (),
    extra_modules: Sequence[ModuleType | str] = (),
    autoload: bool | None = None,
) -> Registry:
    """Make a fresh plugin manager, load plugins and collect their components.

    ``extra_modules`` are registered in addition (modules or import paths).
    Raises :class:`PluginError` if a plugin fails to import, returns a class
    that is not a component of the hook's family, or offers a name that
    another plugin already offers (both providers are named).
    """
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(ErSpecs)
    blocked = sorted(set(block) | set(_env_list(ENV_BLOCK)))
    for name in blocked:
        pm.set_blocked(name)
    if autoload is None:
        autoload = not _autoload_disabled()
    problems: list[Problem] = []
    infos: dict[str, PluginInfo] = {}
    _load_entry_points(pm, autoload, infos, problems)
    _register_modules(pm, [*extra_modules, *_env_list(ENV_PLUGINS)], infos, problems)
    if problems:
        raise PluginError(problems)
    registry = Registry(plugins=list(infos.values()), blocked=blocked, manager=pm)
    for family in FAMILIES.values():
        _collect_family(pm, family, infos, registry, problems)
    if problems:
        raise PluginError(problems)
    return registry


def _load_entry_points(pm: pluggy.PluginManager, autoload: bool, infos: dict[str, PluginInfo], problems: list[Problem]) -> None:
    """Register the modules of the ``er_framework`` entry points (only er-framework's own without autoload)."""
    seen: set[tuple[str, str]] = set()
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        dist_name, version = _dist_of(ep)
        if (ep.name, ep.value) in seen:
            continue  # the same distribution visible twice on sys.path
        seen.add((ep.name, ep.value))
        if not autoload and dist_name.lower().replace("_", "-") != DISTRIBUTION:
            continue
        if pm.is_blocked(ep.name):
            continue
        if pm.get_plugin(ep.name) is not None:
            other = infos.get(ep.name)
            problems.append(
                Problem(
                    where=f"entry point {ep.name!r}",
                    message=(
                        f"two plugins are named {ep.name!r}: {ep.value} ({dist_name}) and "
                        f"{other.module if other else '?'} ({other.distribution if other else '?'})"
                    ),
                    fix="uninstall one of them, or block one with " + ENV_BLOCK,
                )
            )
            continue
        try:
            module = ep.load()
        except Exception as exc:  # a broken third-party plugin must not crash with a traceback
            problems.append(
                Problem(
                    where=f"entry point {ep.name!r} ({dist_name} {version})",
                    message=f"cannot import {ep.value}: {type(exc).__name__}: {exc}",
                    fix=f"reinstall {dist_name}, or block it with {ENV_BLOCK}={ep.name}",
                )
            )
            continue
        pm.register(module, name=ep.name)
        infos[ep.name] = PluginInfo(ep.name, ep.value, dist_name, version)


def _register_modules(
    pm: pluggy.PluginManager,
    modules: Sequence[ModuleType | str],
    infos: dict[str, PluginInfo],
    problems: list[Problem],
) -> None:
    """Register modules named explicitly (``extra_modules``, ``ER_FRAMEWORK_PLUGINS``)."""
    for mod in modules:
        if isinstance(mod, str):
            if pm.is_blocked(mod):
                continue
            try:
                module = importlib.import_module(mod)
            except Exception as exc:
                problems.append(
                    Problem(
                        where=ENV_PLUGINS,
                        message=f"cannot import plugin module {mod!r}: {type(exc).__name__}: {exc}",
                        fix="check the module path and that its package is installed",
                    )
                )
                continue
            pname = mod
        else:
            module, pname = mod, mod.__name__
        if pm.is_blocked(pname) or pm.is_registered(module):
            continue
        pm.register(module, name=pname)
        infos[pname] = PluginInfo(pname, module.__name__, "(registered explicitly)", "")


def _collect_family(
    pm: pluggy.PluginManager,
    family: Family,
    infos: dict[str, PluginInfo],
    registry: Registry,
    problems: list[Problem],
) -> None:
    """Call every plugin's hook of ``family`` and add the classes it returns to ``registry``."""
    members = registry.components[family.name]
    for impl in getattr(pm.hook, family.hook).get_hookimpls():
        pname = pm.get_name(impl.plugin) or "?"
        info = infos.get(pname, PluginInfo(pname, getattr(impl.plugin, "__name__", "?"), "?", "?"))
        try:
            classes = impl.function() or []
        except Exception as exc:
            problems.append(
                Problem(
                    where=f"plugin {pname!r}",
                    message=f"{family.hook}() raised {type(exc).__name__}: {exc}",
                    fix=f"fix or block the plugin ({ENV_BLOCK}={pname})",
                )
            )
            continue
        for cls in _as_list(classes):
            problem = _check_component(cls, family.base, info, family.hook)
            if problem is None and cls.name in members and members[cls.name].cls is not cls:
                problem = _clash(family.name, members[cls.name], cls, info)
            if problem is not None:
                problems.append(problem)
                continue
            members[cls.name] = ComponentInfo(family.name, cls.name, cls, info)


def _clash(family: str, existing: ComponentInfo, cls: type[Component], info: PluginInfo) -> Problem:
    return Problem(
        where=f"{family} {cls.name!r}",
        message=(
            f"two components are named {cls.name!r}: "
            f"{existing.cls.__module__}.{existing.cls.__qualname__} from plugin "
            f"{existing.plugin.name!r} ({existing.plugin.distribution}) and "
            f"{cls.__module__}.{cls.__qualname__} from plugin {info.name!r} "
            f"({info.distribution})"
        ),
        fix=f"rename one of them, or block one plugin with {ENV_BLOCK}",
    )


def _as_list(classes: Any) -> list[Any]:
    if isinstance(classes, (list, tuple)):
        return list(classes)
    return [classes]


def _check_component(cls: Any, base: type[Component], info: PluginInfo, hook: str) -> Problem | None:
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return Problem(
            where=f"plugin {info.name!r} ({info.module})",
            message=f"{hook}() returned {cls!r}, which is not a subclass of {base.__name__}",
            fix=f"return classes derived from er_framework.{base.__name__}",
        )
    if not cls.name or not isinstance(cls.name, str):
        return Problem(
            where=f"plugin {info.name!r} ({info.module})",
            message=f"{cls.__qualname__} has no 'name'",
            fix="set the class attribute name = '...' (the YAML type)",
        )
    return None


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The process-wide registry (built on first use from the environment)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = build_registry()
    return _DEFAULT


def reset_default_registry() -> None:
    global _DEFAULT
    _DEFAULT = None


def describe_params(cls: type[Component]) -> list[dict[str, Any]]:
    """Parameters of a component: name, type, default, description.

    The type is written as in the YAML: ``field`` for a source column
    (:data:`~er_framework.components.FieldRef`), ``list[field]``, ``'all' | 'first'``, ``int | null`` ...
    """
    out = []
    for pname, f in cls.Params.model_fields.items():
        default = None if f.is_required() else f.get_default(call_default_factory=True)
        out.append(
            {
                "name": pname,
                "type": type_text(f.annotation, f.metadata),
                "required": f.is_required(),
                "default": default,
                "description": f.description or "",
            }
        )
    return out


def type_text(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    """A parameter's type as a short YAML-side name: ``field``, ``list[field | list[field]]``, ``int | null``."""
    if any(m is FIELD_REF for m in metadata):
        return "field"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0], annotation.__metadata__)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if annotation is type(None):
        return "null"
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(a) for a in args)}]" if args else name
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", None) or str(annotation)


def iter_components(registry: Registry) -> Iterable[ComponentInfo]:
    """Every component, family by family in pipeline order, by name within a family."""
    for family in FAMILIES:
        for name in registry.names(family):
            yield registry.components[family][name]
