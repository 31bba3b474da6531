"""The report's plots (matplotlib figures, embedded as PNGs): skew per placer, leaders per broker of the
report scenario, the failure impact of losing a rack or a data centre."""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

# --- plots -----------------------------------------------------------------------------------------


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _placer_colors(placers: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(placers)}


#: Room between two neighbouring x labels, in pixels.
_LABEL_GAP = 4.0
#: Placer labels in plots: at most this many characters a line, and this many lines.
_LABEL_WIDTH = 16
_LABEL_LINES = 3
#: With more placers than this, a figure's panels go one above the other (each then has the full width).
_SIDE_BY_SIDE_PLACERS = 4


def _wrap_label(text: str, width: int = _LABEL_WIDTH, lines: int | None = _LABEL_LINES) -> str:
    """``text`` on lines of at most ``width`` characters, broken where its words meet (``camelCase``
    humps, ``_``, ``-``, ``.``, ``/``, ``:``); past ``lines`` lines the last one ends in an ellipsis."""
    if len(text) <= width:
        return text
    pieces = [p for p in re.split(r"(?<=[._\-/:\\])|(?<=[a-z0-9])(?=[A-Z])", text) if p]
    out: list[str] = []
    for piece in pieces:
        while len(piece) > width:  # a word longer than a line is cut
            out.append(piece[:width])
            piece = piece[width:]
        if out and len(out[-1]) + len(piece) <= width:
            out[-1] += piece
        else:
            out.append(piece)
    if lines is not None and len(out) > lines:
        out = [*out[: lines - 1], out[lines - 1][: width - 1] + "\u2026"]
    return "\n".join(out)


def plot_labels(placers: Sequence[str], names: Mapping[str, str]) -> dict[str, str]:
    """The label of each placer in the plots: its short name, wrapped onto a few short lines (the
    figures' notes give the full names). Labels that a cut would make alike are not cut."""
    labels = {p: _wrap_label(names[p]) for p in placers}
    if len(set(labels.values())) < len(labels):
        labels = {p: _wrap_label(names[p], lines=None) for p in placers}
    return labels


def _panels(fig: Figure, count: int, placers: int) -> list[Any]:
    """``count`` axes side by side, or one above the other when there are many placers to label."""
    if placers > _SIDE_BY_SIDE_PLACERS:
        return list(fig.subplots(count, 1, squeeze=False)[:, 0])
    return list(fig.subplots(1, count, squeeze=False)[0])


def _panels_size(count: int, placers: int, width: float = 5.5) -> tuple[float, float]:
    if placers > _SIDE_BY_SIDE_PLACERS:
        return (11.0, 4.2 * count + 1.0)
    return (max(7.0, width * count), 5.2)


def fit_xticklabels(fig: Figure, axes: Sequence[Any]) -> None:
    """Keeps the x tick labels of ``axes`` apart: level when they fit side by side, else turned 30
    degrees, else upright, and in a smaller font when even upright labels would touch. The figure's
    constrained layout makes room for them below the axes."""
    fig.draw_without_rendering()
    for ax in axes:
        labels = sorted(
            (t for t in ax.get_xticklabels() if t.get_text()), key=lambda t: t.get_window_extent().x0
        )
        if len(labels) < 2:
            continue
        boxes = [t.get_window_extent() for t in labels]
        centres = [(b.x0 + b.x1) / 2 for b in boxes]
        spacing = min(b - a for a, b in zip(centres, centres[1:], strict=False))
        side_by_side = all(
            (a.width + b.width) / 2 + _LABEL_GAP <= cb - ca
            for a, b, ca, cb in zip(boxes, boxes[1:], centres, centres[1:], strict=False)
        )
        if side_by_side:
            continue
        height = max(b.height for b in boxes) + _LABEL_GAP
        if spacing * math.sin(math.radians(30)) >= height:
            for t in labels:
                t.set_rotation(30)
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")
            continue
        if spacing < height:
            scale = max(0.5, spacing / height)
            for t in labels:
                t.set_fontsize(t.get_fontsize() * scale)
        for t in labels:
            t.set_rotation(90)
            t.set_horizontalalignment("center")
    fig.draw_without_rendering()


def skew_figure(skews: pd.DataFrame, placers: Sequence[str], names: Mapping[str, str]) -> Figure:
    """Box plots of leader and replica skew per placer (runs that placed nothing left out)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    placed = skews[skews["partitions"] > 0]
    fig = Figure(figsize=_panels_size(2, len(placers)), layout="constrained")
    axes = _panels(fig, 2, len(placers))
    colors = _placer_colors(placers)
    labels = plot_labels(placers, names)
    for ax, column, what in zip(axes, ("leaders_skew", "replicas_skew"), ("leader", "replica"), strict=True):
        data = [placed.loc[placed["placer"] == p, column].to_numpy() for p in placers]
        parts = ax.boxplot(
            data,
            tick_labels=[labels[p] for p in placers],
            showmeans=True,
            patch_artist=True,
            medianprops={"color": "black", "linewidth": 1.6},
            meanprops={"marker": "^", "markerfacecolor": "white", "markeredgecolor": "black"},
            flierprops={"marker": "o", "markerfacecolor": "none", "markeredgecolor": "#444"},
        )
        for box, placer in zip(parts["boxes"], placers, strict=True):
            box.set_facecolor((*colors[placer][:3], 0.45))
        for i, values in enumerate(data, start=1):
            if not len(values):
                ax.text(i, 1.0, "placed\nnothing", ha="center", va="bottom", fontsize=8, color="#555")
        ax.axhline(1.0, color="#777", linewidth=0.8, linestyle="--")
        ax.set_title(f"{what} skew per run")
        ax.set_xlabel("placer")
        ax.set_ylabel(f"{what} skew (max / mean per broker)")
    handles = [
        Patch(facecolor="#ddd", edgecolor="black", label="box: quartiles (middle half of the runs)"),
        Line2D([], [], color="black", linewidth=1.6, label="line: median"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="^",
            markerfacecolor="white",
            markeredgecolor="black",
            label="triangle: mean",
        ),
        Line2D([], [], color="black", linewidth=1.0, label="whiskers: furthest runs within 1.5 IQR"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="o",
            markerfacecolor="none",
            markeredgecolor="#444",
            label="circles: runs beyond the whiskers",
        ),
        Line2D([], [], color="#777", linewidth=0.8, linestyle="--", label="dashed: 1.0, perfectly even"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    fit_xticklabels(fig, axes)
    return fig


def leaders_figure(
    details: Mapping[str, Mapping[str, Any]], placers: Sequence[str], scenario: str, names: Mapping[str, str]
) -> Figure:
    """Grouped bars: leaders on each broker of ``scenario``, one bar per placer."""
    from matplotlib.ticker import MaxNLocator

    present = [p for p in placers if p in details]
    brokers = details[present[0]]["brokers"]
    fig = Figure(
        figsize=(min(16.0, max(7.0, 0.25 * len(brokers) * len(present) + 4)), 4.6), layout="constrained"
    )
    ax = fig.subplots()
    colors = _placer_colors(placers)
    labels = plot_labels(present, names)
    width = 0.8 / max(1, len(present))
    for i, placer in enumerate(present):
        counts = [b["leaders"] for b in details[placer]["brokers"]]
        xs = [j + (i - (len(present) - 1) / 2) * width for j in range(len(counts))]
        label = labels[placer] if sum(counts) else f"{labels[placer]}\n(placed nothing)"
        ax.bar(xs, counts, width=width, label=label, color=colors[placer])
    ticks = [f"{b['id']}\n{b['rack'] or '-'}" for b in brokers]
    ax.set_xticks(range(len(brokers)), ticks, fontsize=7 if len(brokers) > 12 else 9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("broker (id, rack)")
    ax.set_ylabel("leaders (count)")
    ax.set_title(f"leaders per broker in {scenario}")
    fig.legend(loc="outside right upper", title="placer", fontsize=8, title_fontsize=8)
    fit_xticklabels(fig, [ax])
    return fig


def failure_impact_figure(impact: pd.DataFrame, placers: Sequence[str], names: Mapping[str, str]) -> Figure:
    """Bars of mean leader growth per placer, one panel per scope, worst case as a mark."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    scopes = [s for s in ("rack", "dc") if s in set(impact["scope"])] + sorted(
        set(impact["scope"]) - {"rack", "dc"}
    )
    shown = [p for p in placers if p in set(impact["placer"])]
    fig = Figure(figsize=_panels_size(len(scopes), len(shown)), layout="constrained")
    axes = _panels(fig, len(scopes), len(shown))
    colors = _placer_colors(placers)
    labels = plot_labels(shown, names)
    titles = {"rack": "losing one rack", "dc": "losing one data centre"}
    for ax, scope in zip(axes, scopes, strict=True):
        rows = impact[impact["scope"] == scope].set_index("placer")
        present = [p for p in shown if p in rows.index]
        means = [rows.loc[p, "leader_growth_mean"] for p in present]
        worst = [rows.loc[p, "leader_growth_worst"] for p in present]
        ax.bar(range(len(present)), means, color=[colors[p] for p in present])
        ax.scatter(range(len(present)), worst, color="black", marker="_", s=400, zorder=3)
        ax.axhline(1.0, color="#777", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(present)), [labels[p] for p in present])
        ax.set_title(titles.get(scope, f"losing one {scope}"))
        ax.set_xlabel("placer")
        ax.set_ylabel("leader growth (ratio)")
    handles = [
        Patch(facecolor="#bbb", label="bar: mean over the losses (colour: placer)"),
        Line2D([], [], color="black", marker="_", markersize=14, linestyle="none", label="mark: worst loss"),
        Line2D([], [], color="#777", linewidth=0.8, linestyle="--", label="dashed: 1.0, no growth"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    fit_xticklabels(fig, axes)
    return fig
