"""Finds and instantiates plugins (replica placers, election policies) named in the configuration.

A plugin kind (:class:`PluginKind`) says what its plugins are called, which built-ins it ships, its
entry-point group and the method every plugin must have. A name is one of:

- a built-in short name (``striped``, ``kafka``, ...);
- a name registered under the kind's entry-point group (``placement_sim.placers``, ...);
- a dotted path ``package.module.ClassName`` (Kafka style) or ``package.module:ClassName``;
- a Python file ``path/to/file.py:ClassName`` (or ``path/to/file.py`` holding exactly one plugin class).

A plugin is shown (in logs, start lines and the messages clients receive) by :func:`plugin_label`:
``module.Class`` for an importable class and ``path/to/file.py:Class`` for one loaded from a file,
never the name of the module generated to hold the file.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from controller.plugins.properties import PluginLoadError, PropertyValue, property_texts

log = logging.getLogger(__name__)

__all__ = [
    "MalformedResult",
    "Opaque",
    "PluginKind",
    "PluginLoadError",
    "load_plugin",
    "plugin_label",
    "resolve_plugin_class",
]

#: Set on a module imported from a file: the path the user gave, which labels its classes.
SOURCE_ATTRIBUTE = "__placement_sim_source__"


@dataclass(frozen=True)
class PluginKind:
    """One kind of plugin.

    ``normalize`` turns what the plugin's method returned into plain, picklable data (or raises
    :class:`MalformedResult`); ``declared`` lists the exceptions a plugin may raise on purpose, which
    callers map to protocol errors. Both run wherever the plugin runs (inline or in its worker).
    """

    noun: str
    #: Where this object can be imported from (``module:ATTRIBUTE``), so that a worker finds it.
    ref: str
    entry_point_group: str
    builtins: Mapping[str, str]
    method: str
    normalize: Callable[[Any, bool], Any] = field(default=lambda value, portable: value)
    declared: tuple[type[BaseException], ...] = ()
    #: Class attributes the server reads from a plugin (reported by its worker when it runs isolated).
    attributes: tuple[str, ...] = ()
    #: Across a worker's pipe, arguments may travel as what changed since the last call: ``outbound(args,
    #: state) -> (sent, state)`` runs in the server, ``inbound(sent, state) -> (args, state)`` in the worker
    #: (``state`` None: the other side has nothing yet).
    outbound: Callable[[tuple[Any, ...], Any], tuple[tuple[Any, ...], Any]] | None = None
    inbound: Callable[[tuple[Any, ...], Any], tuple[tuple[Any, ...], Any]] | None = None
    #: The server's own check of a result (never run in a worker): ``check(args, result)`` gets the call's
    #: arguments and the normalized result, when not None, and says what is wrong with it, or None. It runs
    #: where the server handles the result: off the event loop with the call when the call is big.
    check: Callable[[tuple[Any, ...], Any], str | None] | None = None
    #: Results may travel packed: ``pack(value)`` in the worker, ``unpack(packed)`` (a coroutine function,
    #: free to yield to the event loop) in the server.
    pack: Callable[[Any], Any] | None = None
    unpack: Callable[[Any], Awaitable[Any]] | None = None


class MalformedResult(Exception):
    """What a plugin returned cannot be used; the message says why."""


class Opaque:
    """A replica entry that is not an int, described so that it crosses a process boundary."""

    __slots__ = ("description",)

    def __init__(self, description: str) -> None:
        self.description = description

    def __repr__(self) -> str:
        return self.description

    def __reduce__(self) -> tuple[object, ...]:
        return (Opaque, (self.description,))


def _import_file(path: Path, shown_as: str) -> ModuleType:
    resolved = path.resolve()
    name = f"_placement_sim_plugin_{abs(hash(str(resolved)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot import file {path}")
    module = importlib.util.module_from_spec(spec)
    setattr(module, SOURCE_ATTRIBUTE, shown_as)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginLoadError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _is_plugin_class(obj: object, kind: PluginKind) -> bool:
    return inspect.isclass(obj) and callable(getattr(obj, kind.method, None)) and not inspect.isabstract(obj)


def _only_class_in(module: ModuleType, where: str, kind: PluginKind) -> type:
    found = [
        obj
        for obj in vars(module).values()
        if _is_plugin_class(obj, kind) and obj.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = ", ".join(sorted(c.__name__ for c in found)) or "none"
        raise PluginLoadError(f"{where} must define exactly one {kind.noun} class (found: {names}); name one")
    return found[0]


def _from_module(
    module_name: str, attr: str | None, name: str, kind: PluginKind, shown: str | None = None
) -> type:
    """``attr`` of module ``module_name`` (``shown`` names the module in messages: a file's path)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginLoadError(f"{kind.noun} {name!r}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise PluginLoadError(
            f"{kind.noun} {name!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if attr is None:
        return _only_class_in(module, f"module {module_name!r}", kind)
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            classes = sorted(
                c.__name__
                for c in vars(module).values()
                if _is_plugin_class(c, kind) and c.__module__ == module.__name__
            )
            defined = f" (its {kind.noun} classes: {', '.join(classes)})" if classes else ""
            where = shown or repr(module_name)
            raise PluginLoadError(
                f"{kind.noun} {name!r}: {where} has no attribute {attr!r}{defined}"
            ) from exc
    if not isinstance(obj, type):
        raise PluginLoadError(f"{kind.noun} {name!r}: {attr!r} is not a class")
    return obj


def resolve_plugin_class(kind: PluginKind, name: str) -> type:
    """The class a name stands for; raises PluginLoadError saying why not."""
    name = name.strip()
    if not name:
        raise PluginLoadError(f"{kind.noun} name is empty")
    if name in kind.builtins:
        module_name, attr = kind.builtins[name].split(":")
        return _from_module(module_name, attr, name, kind)
    from importlib.metadata import entry_points  # only names that are not built-ins pay for the import

    for ep in entry_points(group=kind.entry_point_group):
        if ep.name == name:
            try:
                cls = ep.load()
            except Exception as exc:
                raise PluginLoadError(
                    f"{kind.noun} {name!r}: entry point {ep.value!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
            return _check_class(cls, name, kind)
    file_part, _, attr = name.partition(":") if ".py" in name else (name, "", "")
    if file_part.endswith(".py"):
        path = Path(file_part)
        if not path.is_file():
            raise PluginLoadError(f"{kind.noun} file {path} does not exist")
        module = _import_file(path, file_part)
        if attr:
            cls = _from_module(module.__name__, attr, name, kind, shown=repr(file_part))
        else:
            cls = _only_class_in(module, str(path), kind)
        return _check_class(cls, name, kind)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        return _check_class(_from_module(module_name, attr, name, kind), name, kind)
    if "." in name:
        module_name, _, attr = name.rpartition(".")
        return _check_class(_from_module(module_name, attr, name, kind), name, kind)
    known = ", ".join(sorted(kind.builtins))
    raise PluginLoadError(
        f"unknown {kind.noun} {name!r}: not a built-in ({known}), an entry point in "
        f"{kind.entry_point_group!r}, a dotted path package.module.ClassName, nor a file.py"
    )


def _check_class(cls: object, name: str, kind: PluginKind) -> type:
    if not isinstance(cls, type) or not callable(getattr(cls, kind.method, None)):
        raise PluginLoadError(f"{kind.noun} {name!r}: {cls!r} is not a class with a {kind.method}() method")
    if inspect.isabstract(cls):
        raise PluginLoadError(f"{kind.noun} {name!r}: {cls.__name__} is abstract")
    return cls


def load_plugin(kind: PluginKind, name: str, configs: Mapping[str, PropertyValue] | None = None) -> Any:
    """Instantiates the named plugin and calls ``configure(configs)`` on it (when it has one), every
    value as text (numbers and booleans are written as a properties file would)."""
    texts = property_texts(configs or {})
    cls = resolve_plugin_class(kind, name)
    label = class_label(cls)
    try:
        plugin = cls()
    except Exception as exc:
        raise PluginLoadError(
            f"{kind.noun} {label}: {cls.__name__}() failed: {type(exc).__name__}: {exc}"
        ) from exc
    configure = getattr(plugin, "configure", None)
    if callable(configure):
        try:
            configure(texts)
        except Exception as exc:
            raise PluginLoadError(
                f"{kind.noun} {label}: {cls.__name__}.configure() failed: {type(exc).__name__}: {exc}"
            ) from exc
    log.debug("loaded %s %s as %s", kind.noun, name, label)
    return plugin


def class_label(cls: type) -> str:
    """``module.Class``, or ``path/to/file.py:Class`` for a class loaded from a file."""
    module = sys.modules.get(cls.__module__)
    source = getattr(module, SOURCE_ATTRIBUTE, None)
    if source is not None:
        return f"{source}:{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def plugin_label(plugin: object) -> str:
    """How a plugin instance is shown in logs and messages (see :func:`class_label`)."""
    return class_label(type(plugin))
