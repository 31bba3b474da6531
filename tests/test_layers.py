"""The layers, as the design draws them: read from the sources' imports (not what happens to be loaded).

protocol/ knows nothing of the controller; handlers never see the server, a connection or the security
layer; only the assembly builds a server; the command line is imported by nothing (imports under
``if TYPE_CHECKING:`` are for types only and do not count for these); and no module of controller/,
protocol/ or placement_sim/ reaches itself through its imports, type-only imports included. Placement imports nothing of
the controller but the plugin machinery, type-only imports included.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "controller")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _runtime_nodes(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node, except what sits under ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(module: str, path: Path, types_too: bool = False) -> set[str]:
    """The modules ``module`` imports when it runs (``types_too``: and for type checking; relative imports
    resolved; ``from a import b`` counts ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree) if types_too else _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    sources = _sources()
    return {
        name: {i for i in _imports(name, path) if i in sources or not i.startswith(PACKAGES)}
        for name, path in sources.items()
    }


def _importers(graph: dict[str, set[str]], target: str) -> list[str]:
    return sorted(
        m for m, deps in graph.items() if any(d == target or d.startswith(target + ".") for d in deps)
    )


def test_protocol_imports_nothing_of_the_controller(graph: dict[str, set[str]]) -> None:
    offenders = {
        m: sorted(d for d in deps if d.startswith(("controller", "placement_sim")))
        for m, deps in graph.items()
        if m.startswith("protocol")
    }
    assert {m: d for m, d in offenders.items() if d} == {}


def test_handlers_see_neither_the_server_nor_a_connection_nor_the_security_layer(
    graph: dict[str, set[str]],
) -> None:
    forbidden = ("controller.server", "controller.connection", "controller.security", "controller.dispatch")
    offenders = {
        m: sorted(d for d in deps if d.startswith(forbidden))
        for m, deps in graph.items()
        if m.startswith("controller.handlers")
    }
    assert {m: d for m, d in offenders.items() if d} == {}


def test_only_the_assembly_builds_a_server(graph: dict[str, set[str]]) -> None:
    assert _importers(graph, "controller.server") == ["controller.assembly"]


def test_the_connection_and_the_security_layer_know_neither_the_server_nor_the_dispatch(
    graph: dict[str, set[str]],
) -> None:
    for module in ("controller.connection", "controller.security"):
        assert not [d for d in graph[module] if d.startswith(("controller.server", "controller.dispatch"))]


def test_nothing_imports_the_command_line(graph: dict[str, set[str]]) -> None:
    assert [m for m, deps in graph.items() if any(d.startswith("placement_sim.cli") for d in deps)] == []


def test_the_product_imports_nothing_of_the_reference_harness(graph: dict[str, set[str]]) -> None:
    """harness/ (Kafka's jars, its code in a JVM, its tools) is for tests and benchmarks only."""
    assert [
        m for m, deps in graph.items() if any(d == "harness" or d.startswith("harness.") for d in deps)
    ] == []


def _outside(package: str, allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """The modules of controller/ that modules of ``package`` import (every import statement: in functions
    and for types too) outside ``package`` and ``allowed``."""
    found = {}
    for name, path in _sources().items():
        if name == package or name.startswith(package + "."):
            imported = {d for d in _imports(name, path, types_too=True) if d.startswith("controller")}
            bad = sorted(
                d for d in imported if not d.startswith(tuple(a + "." for a in allowed)) and d not in allowed
            )
            if bad:
                found[name] = bad
    return found


def test_placement_imports_nothing_of_the_controller_but_the_plugin_machinery() -> None:
    """As Kafka's ``metadata/placement`` imports nothing of its controller: the placement service is given
    limits and a view of the cluster, never the configuration or the cluster state."""
    assert _outside("controller.placement", ("controller.placement", "controller.plugins")) == {}
    # ... and the plugin machinery nothing of the controller but its offloading of big work.
    assert _outside("controller.plugins", ("controller.plugins", "controller.offload")) == {}


def test_no_circles() -> None:
    """No module of controller/, protocol/ or placement_sim/ (the command line, the pipeline) reaches
    itself through its imports (Tarjan's SCCs)."""
    sources = _sources((*PACKAGES, "placement_sim"))
    internal = {
        m: {d for d in _imports(m, path, types_too=True) if d in sources and d != m}
        for m, path in sources.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(internal[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for node in sorted(internal):
        if node not in index:
            visit(node)
    # ``from package import module`` reads the package's __init__, which may import its own modules: a
    # package with its modules is one place, not a circle between layers.
    circles = [c for c in circles if not _package_and_its_modules(c)]
    assert circles == []


def _package_and_its_modules(members: list[str]) -> bool:
    shortest = min(members, key=len)
    return all(m == shortest or m.startswith(shortest + ".") for m in members)
