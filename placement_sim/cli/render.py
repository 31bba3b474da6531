"""How placements and comparisons are shown: Fluvio-style tables and JSON documents.

Every function needs only the brokers and the replica lists, so a placement from a running server is
shown exactly like one computed in-process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from controller.placement.api import UsableBroker
from controller.placement.metrics import SUMMARY_KEYS
from placement_sim.cli.placement_outcome import Comparison

__all__ = ["NO_RACK", "placement_to_json", "render_comparison", "render_placement"]

NO_RACK = "-"


def _rack_columns(brokers: Sequence[UsableBroker]) -> tuple[list[str], dict[int, str], str]:
    """Column names and each broker's column: racks when any broker has one, else brokers."""
    if any(b.rack is not None for b in brokers):
        column = {b.id: b.rack if b.rack is not None else NO_RACK for b in brokers}
        return sorted(set(column.values())), column, "rack"
    column = {b.id: str(b.id) for b in brokers}
    return [str(b.id) for b in sorted(brokers, key=lambda b: b.id)], column, "broker"


def _replica_map(start_partition: int, replicas_lists: Sequence[Sequence[int]]) -> list[str]:
    cells = [str(list(r)) for r in replicas_lists]
    width = max([len("Replicas"), *map(len, cells)])
    rule = "-" * (width + 18)
    lines = [rule, f"| Partition |  {'Replicas':<{width}}  |", rule]
    for offset, cell in enumerate(cells):
        lines.append(f"| {start_partition + offset:>7}   |  {cell:<{width}}  |")
    lines.append(rule)
    return lines


def _per_rack(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> list[str]:
    names, column, kind = _rack_columns(brokers)
    leaders: Counter[str] = Counter()
    followers: Counter[str] = Counter()
    rows: list[tuple[int, str, list[str]]] = []
    for offset, replicas in enumerate(replicas_lists):
        for i, broker in enumerate(replicas):
            (followers if i else leaders)[column.get(broker, NO_RACK)] += 1
        cells = [
            f"[{leaders[n] or ' '}] {followers[n] or ''}".rstrip() if leaders[n] or followers[n] else ""
            for n in names
        ]
        rows.append((start_partition + offset, str(list(replicas)), cells))
    header_names = names if kind == "rack" else [f"broker {n}" for n in names]
    widths = [
        max(len(h), len(f"[{leaders[n]}] {followers[n]}"), len(str(followers[n])) + 4)
        for h, n in zip(header_names, names, strict=True)
    ]
    replica_width = max([len("Replicas"), *(len(r[1]) for r in rows)])
    lead = 9 + 3 + 3 + replica_width + 3  # "Partition" + " | " + pad + replicas + gap

    def line(first: str, cells: Sequence[str]) -> str:
        return (first + "".join(f"{c:<{w}}  " for c, w in zip(cells, widths, strict=True))).rstrip()

    rule = "-" * (lead + sum(w + 2 for w in widths) - 2)
    title = f"{'Partition':>9} |   {'Replicas':<{replica_width}}   "
    lines = [rule, line(title, header_names), rule]
    for partition, replicas, cells in rows:
        lines.append(line(f"{partition:>8}  |   {replicas:<{replica_width}}   ", cells))
    lines.append(rule)
    label = lead - 12
    lines.append(line(f"{'':<{label}}{'Leaders':<12}", [f"{leaders[n]:>3}" for n in names]))
    lines.append(line(f"{'':<{label}}{'Followers':<12}", [f"{followers[n]:>3}" for n in names]))
    lines.append(rule)
    return lines


def render_placement(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> str:
    """The replica map, then leaders ``[n]`` and followers per rack as running totals, with totals.

    Without racks the second table has a column per broker; brokers without a rack count under ``-``.
    """
    _, _, per = _rack_columns(brokers)
    lines = ["Replica map", *_replica_map(start_partition, replicas_lists), ""]
    lines += [
        f"[leaders] followers per {per}, running totals",
        *_per_rack(brokers, start_partition, replicas_lists),
    ]
    return "\n".join(lines) + "\n"


def placement_to_json(
    brokers: Sequence[UsableBroker], start_partition: int, replicas_lists: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """The placement as a JSON-able document: partitions, then leaders and followers per broker and rack."""
    leaders: Counter[int] = Counter(r[0] for r in replicas_lists if r)
    followers: Counter[int] = Counter(b for r in replicas_lists for b in r[1:])
    racks: dict[str, dict[str, Any]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        if b.rack is None:
            continue
        entry = racks.setdefault(b.rack, {"rack": b.rack, "brokers": [], "leaders": 0, "followers": 0})
        entry["brokers"].append(b.id)
        entry["leaders"] += leaders[b.id]
        entry["followers"] += followers[b.id]
    return {
        "partitions": [
            {"partition": start_partition + offset, "replicas": list(replicas)}
            for offset, replicas in enumerate(replicas_lists)
        ],
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "fenced": b.fenced,
                "leaders": leaders[b.id],
                "followers": followers[b.id],
            }
            for b in sorted(brokers, key=lambda b: b.id)
        ],
        "racks": [racks[name] for name in sorted(racks)],
    }


def _cell(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def render_comparison(comparisons: Sequence[Comparison]) -> str:
    """A table: one row per summary metric, one column per placer; failed placers show their error, and
    placers that do not apply to the cluster their reason."""
    rows: list[tuple[str, list[str]]] = [
        ("placed", [_placed_cell(i, c) for i, c in enumerate(comparisons, 1)])
    ]
    summaries = [c.metrics.summary() if c.metrics else None for c in comparisons]
    for key in SUMMARY_KEYS:
        rows.append((key, [_cell(s[key]) if s else "-" for s in summaries]))
    label_width = max(len(label) for label, _ in rows)
    widths = [max(len(c.placer), *(len(cells[i]) for _, cells in rows)) for i, c in enumerate(comparisons)]
    header = f"{'':<{label_width}}  " + "  ".join(
        f"{c.placer:>{w}}" for c, w in zip(comparisons, widths, strict=True)
    )
    rule = "-" * len(header)
    lines = [header, rule]
    for label, cells in rows:
        lines.append(
            f"{label:<{label_width}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(cells, widths, strict=True))
        )
    lines.append(rule)
    for i, c in enumerate(comparisons, 1):
        if c.not_applicable is not None:
            lines.append(f"[{i}] {c.placer}: not applicable: {c.not_applicable}")
        elif c.error is not None:
            lines.append(f"[{i}] {c.placer}: {c.error}")
    return "\n".join(lines) + "\n"


def _placed_cell(index: int, comparison: Comparison) -> str:
    if comparison.metrics:
        return "yes"
    return f"n/a [{index}]" if comparison.not_applicable is not None else f"no [{index}]"
