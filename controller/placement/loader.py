"""Finds and instantiates replica placers named by ``replica.placer.class.name``.

A name is one of:
- a built-in short name (``striped``, ``legacy``, ``fluvio``, ``fluvio-fair``, ``multi-level``);
- a name registered under the entry-point group ``placement_sim.placers``;
- a dotted path ``package.module.ClassName`` (Kafka style) or ``package.module:ClassName``;
- a Python file ``path/to/file.py:ClassName`` (or ``path/to/file.py`` holding exactly one placer).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from controller.placement.api import ReplicaPlacer

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "placement_sim.placers"

BUILTIN_PLACERS: dict[str, str] = {
    "striped": "controller.placement.striped:StripedReplicaPlacer",
    "legacy": "controller.placement.legacy:LegacyReplicaPlacer",
    "fluvio": "controller.placement.fluvio:FluvioReplicaPlacer",
    "fluvio-fair": "controller.placement.fluvio_fair:FluvioFairReplicaPlacer",
    "multi-level": "controller.placement.multi_level:MultiLevelReplicaPlacer",
}

DEFAULT_PLACER = "striped"


class PlacerLoadError(ValueError):
    """The placer name cannot be resolved to a usable placer class."""


def _import_file(path: Path) -> ModuleType:
    name = f"_placement_sim_plugin_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PlacerLoadError(f"cannot import placer file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PlacerLoadError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _only_placer_in(module: ModuleType, where: str) -> type:
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and callable(getattr(obj, "place", None))
        and not inspect.isabstract(obj)
    ]
    if len(found) != 1:
        names = ", ".join(sorted(c.__name__ for c in found)) or "none"
        raise PlacerLoadError(f"{where} must define exactly one placer class (found: {names}); name one")
    return found[0]


def _from_module(module_name: str, attr: str | None, name: str) -> type:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlacerLoadError(f"placer {name!r}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise PlacerLoadError(
            f"placer {name!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if attr is None:
        return _only_placer_in(module, f"module {module_name!r}")
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise PlacerLoadError(f"placer {name!r}: {module_name!r} has no attribute {attr!r}") from exc
    if not isinstance(obj, type):
        raise PlacerLoadError(f"placer {name!r}: {attr!r} is not a class")
    return obj


def resolve_placer_class(name: str) -> type:
    """The class a placer name stands for; raises PlacerLoadError saying why not."""
    name = name.strip()
    if not name:
        raise PlacerLoadError("placer name is empty")
    if name in BUILTIN_PLACERS:
        module_name, attr = BUILTIN_PLACERS[name].split(":")
        return _from_module(module_name, attr, name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                cls = ep.load()
            except Exception as exc:
                raise PlacerLoadError(
                    f"placer {name!r}: entry point {ep.value!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
            return _check_class(cls, name)
    file_part, _, attr = name.partition(":") if ".py" in name else (name, "", "")
    if file_part.endswith(".py"):
        path = Path(file_part)
        if not path.is_file():
            raise PlacerLoadError(f"placer file {path} does not exist")
        module = _import_file(path)
        cls = (
            _from_module(module.__name__, attr or None, name) if attr else _only_placer_in(module, str(path))
        )
        return _check_class(cls, name)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        return _check_class(_from_module(module_name, attr, name), name)
    if "." in name:
        module_name, _, attr = name.rpartition(".")
        return _check_class(_from_module(module_name, attr, name), name)
    known = ", ".join(sorted(BUILTIN_PLACERS))
    raise PlacerLoadError(
        f"unknown placer {name!r}: not a built-in ({known}), an entry point in {ENTRY_POINT_GROUP!r}, "
        "a dotted path package.module.ClassName, nor a file.py"
    )


def _check_class(cls: object, name: str) -> type:
    if not isinstance(cls, type) or not callable(getattr(cls, "place", None)):
        raise PlacerLoadError(f"placer {name!r}: {cls!r} is not a class with a place() method")
    if inspect.isabstract(cls):
        raise PlacerLoadError(f"placer {name!r}: {cls.__name__} is abstract")
    return cls


def load_placer(name: str, configs: Mapping[str, str] | None = None) -> ReplicaPlacer:
    """Instantiates the named placer and calls ``configure(configs)`` on it."""
    cls = resolve_placer_class(name)
    try:
        placer = cls()
    except Exception as exc:
        raise PlacerLoadError(
            f"placer {name!r}: {cls.__name__}() failed: {type(exc).__name__}: {exc}"
        ) from exc
    configure = getattr(placer, "configure", None)
    if callable(configure):
        try:
            configure(dict(configs or {}))
        except Exception as exc:
            raise PlacerLoadError(
                f"placer {name!r}: {cls.__name__}.configure() failed: {type(exc).__name__}: {exc}"
            ) from exc
    log.debug("loaded placer %s as %s.%s", name, cls.__module__, cls.__qualname__)
    return placer  # type: ignore[return-value]


def placer_label(placer: object) -> str:
    """``module.Class`` of a placer, for messages."""
    cls = type(placer)
    return f"{cls.__module__}.{cls.__qualname__}"
