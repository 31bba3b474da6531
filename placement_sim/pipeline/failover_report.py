"""The report's section on simulated failures: a placer x election policy heat map per failure kind,
and one sentence per kind naming the best placer and policy, or the pairs that tie.

It reads the ``failover_impact`` aggregate (:mod:`placement_sim.pipeline.aggregates`). "Best" means
the fewest partition-seconds without a leader (mean over the runs); among pairs that tie on it, the
fewest partitions offline at the worst moment, then the fewest under-replicated partition-seconds:
availability first, then durability. The sentence says when pairs tie, and which measure broke the tie;
pairs that tie on every measure are written as a tie (listed by name).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = [
    "FAILURE_TITLES",
    "MEASURE",
    "MEASURE_NAMES",
    "Standing",
    "best_per_failure",
    "failover_sentences",
    "figure_value",
    "heatmap_figure",
    "ranked_first",
    "section",
    "standings",
]

#: How the report names each failure kind.
FAILURE_TITLES = {
    "none": "No failure",
    "broker": "A broker crash",
    "rack": "Losing a rack",
    "dc": "Losing a data centre",
    "rolling": "A rolling restart",
    "slow-follower": "A crash with a slow follower",
}

#: The heat map's figure: partition-seconds without a leader, mean over the runs.
MEASURE = "leaderless_partition_s_mean"
_ORDER = (MEASURE, "offline_worst_mean", "under_replicated_partition_s_mean")
#: How sentences name each measure of :data:`_ORDER` ("the fewest ...").
MEASURE_NAMES = {
    MEASURE: "partition-seconds without a leader",
    "offline_worst_mean": "partitions offline at the worst moment",
    "under_replicated_partition_s_mean": "under-replicated partition-seconds",
}
#: The heat map's colour bar: the measure and its unit.
UNIT = "partition-seconds\nwithout a leader\n(mean over the runs)"
#: The most tied pairs a sentence names one by one.
_NAMED_TIES = 6


def _kinds(impact: pd.DataFrame) -> list[str]:
    present = set(impact["failure"])
    return [k for k in FAILURE_TITLES if k in present] + sorted(present - set(FAILURE_TITLES))


def figure_value(value: float) -> str:
    """A figure as the map and the sentences write it: enough digits to tell apart what is not a tie."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def ranked_first(rows: pd.DataFrame) -> pd.Series:
    """The best row of one failure kind's rows (see the module docstring)."""
    return rows.sort_values([*_ORDER, "placer", "policy"], kind="mergesort", na_position="last").iloc[0]


@dataclass(frozen=True)
class Standing:
    """One failure kind's outcome: the best pair, its figure, the pairs that tie with it on the
    figure (the best among them, in rank order), the measure that broke that tie (None: no tie, or a tie
    on every measure), and the worst pair with its figure."""

    best: tuple[str, str]
    value: float
    tied: tuple[tuple[str, str], ...]
    broken_by: str | None
    worst: tuple[str, str]
    worst_value: float

    @property
    def tie_on_every_measure(self) -> bool:
        return len(self.tied) > 1 and self.broken_by is None


def _standing(rows: pd.DataFrame) -> Standing:
    ranked = rows.sort_values([*_ORDER, "placer", "policy"], kind="mergesort", na_position="last")
    top = ranked.iloc[0]
    tied = ranked[ranked[MEASURE] == top[MEASURE]]
    broken_by = None
    candidates = tied
    for measure in _ORDER[1:]:
        if len(candidates) <= 1:
            break
        candidates = candidates[candidates[measure] == candidates[measure].min()]
        if len(candidates) == 1:
            broken_by = measure
    worst = rows.sort_values([MEASURE, "placer", "policy"], ascending=[False, True, True]).iloc[0]
    return Standing(
        best=(str(top["placer"]), str(top["policy"])),
        value=float(top[MEASURE]),
        tied=tuple((str(r["placer"]), str(r["policy"])) for _, r in tied.iterrows()),
        broken_by=broken_by,
        worst=(str(worst["placer"]), str(worst["policy"])),
        worst_value=float(worst[MEASURE]),
    )


def standings(impact: pd.DataFrame) -> dict[str, Standing]:
    """Failure kind -> its :class:`Standing`, in the report's order of kinds."""
    return {kind: _standing(impact[impact["failure"] == kind]) for kind in _kinds(impact)}


def best_per_failure(impact: pd.DataFrame) -> dict[str, tuple[str, str, float]]:
    """Failure kind -> (placer, policy, partition-seconds without a leader) of the best pair."""
    return {kind: (*s.best, s.value) for kind, s in standings(impact).items()}


def _name(name: str, names: Mapping[str, str]) -> str:
    return f"<b>{html.escape(names.get(name, name))}</b>"


def _pairs(pairs: tuple[tuple[str, str], ...], names: Mapping[str, str]) -> str:
    shown = [f"{_name(p, names)} with {_name(q, names)}" for p, q in pairs[:_NAMED_TIES]]
    more = len(pairs) - len(shown)
    if more:
        shown.append(f"{more} more")
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def failover_sentences(impact: pd.DataFrame, names: Mapping[str, str] | None = None) -> list[str]:
    """One HTML sentence per failure kind: the best placer and policy, or the pairs that tie (and the
    measure that broke the tie), and how the worst pair did."""
    names = names or {}
    sentences = []
    for kind, s in standings(impact).items():
        title = html.escape(FAILURE_TITLES.get(kind, kind))
        figure = f"{figure_value(s.value)} partition-seconds without a leader on average"
        placer, policy = s.best
        if len(s.tied) == 1:
            text = (
                f"{title}: {_name(placer, names)} placement with the {_name(policy, names)} election policy "
                f"does best, {figure}"
            )
        elif s.broken_by is None:
            text = f"{title}: {len(s.tied)} pairs tie on every measure, {figure}: {_pairs(s.tied, names)}"
        else:
            best_row = impact[
                (impact["failure"] == kind) & (impact["placer"] == placer) & (impact["policy"] == policy)
            ].iloc[0]
            text = (
                f"{title}: {len(s.tied)} pairs tie at {figure} ({_pairs(s.tied, names)}); the fewest "
                f"{MEASURE_NAMES[s.broken_by]} ({figure_value(float(best_row[s.broken_by]))}) breaks the tie: "
                f"{_name(placer, names)} placement with the {_name(policy, names)} election policy"
            )
        if s.worst_value > s.value:
            worst_placer, worst_policy = s.worst
            text += (
                f" (worst: {html.escape(names.get(worst_placer, worst_placer))} with "
                f"{html.escape(names.get(worst_policy, worst_policy))}, {figure_value(s.worst_value)})"
            )
        sentences.append(text + ".")
    return sentences


def heatmap_figure(impact: pd.DataFrame, names: Mapping[str, str] | None = None) -> Figure:
    """One panel per failure kind: placers down, policies across, colour and number = :data:`MEASURE`,
    on one colour scale (its bar says the unit); the best cell of each panel is outlined, every one of
    them when they tie."""
    names = names or {}
    kinds = _kinds(impact)
    placers = sorted(set(impact["placer"]))
    policies = sorted(set(impact["policy"]))
    top = max(float(impact[MEASURE].max()), 1e-9)
    columns = min(3, len(kinds))
    lines = -(-len(kinds) // columns)
    width = 2.0 + 1.45 * len(policies)
    fig = Figure(figsize=(width * columns + 1.2, (1.2 + 0.55 * len(placers)) * lines), layout="constrained")
    cells = fig.subplots(lines, columns, squeeze=False).ravel()
    for ax in cells[len(kinds) :]:
        ax.set_axis_off()
    axes = list(cells[: len(kinds)])
    image = None
    for ax, kind in zip(axes, kinds, strict=True):
        rows = impact[impact["failure"] == kind].set_index(["placer", "policy"])[MEASURE]
        grid = [[rows.get((p, q), float("nan")) for q in policies] for p in placers]
        image = ax.imshow(grid, cmap="Reds", vmin=0.0, vmax=top, aspect="auto")
        best = float(rows.min())
        for i, line in enumerate(grid):
            for j, value in enumerate(line):
                if pd.notna(value):
                    dark = value > top * 0.6
                    ax.text(
                        j,
                        i,
                        figure_value(float(value)),
                        ha="center",
                        va="center",
                        fontsize=10,
                        color="white" if dark else "black",
                    )
                    if float(value) == best:
                        ax.add_patch(
                            Rectangle(
                                (j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="#1a5fb4", linewidth=2
                            )
                        )
        ax.set_xticks(range(len(policies)), [names.get(q, q) for q in policies], fontsize=9, rotation=20)
        ax.set_yticks(range(len(placers)), [names.get(p, p) for p in placers], fontsize=9)
        ax.set_title(FAILURE_TITLES.get(kind, kind), fontsize=10)
        ax.set_xlabel("election policy", fontsize=9)
        ax.set_ylabel("placer", fontsize=9)
    if image is not None:
        bar = fig.colorbar(image, ax=axes, shrink=0.9)
        bar.set_label(UNIT, fontsize=9)
        bar.ax.tick_params(labelsize=8)
    return fig


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def section(impact: pd.DataFrame | None, title: str, names: Mapping[str, str] | None = None) -> list[str]:
    """The section's HTML parts (none when the sweep simulated no failure)."""
    if impact is None or impact.empty:
        return []
    png = _png(heatmap_figure(impact, names))
    return [
        f"<h2>{html.escape(title)}</h2>",
        '<ul class="summary">',
        *(f"<li>{sentence}</li>" for sentence in failover_sentences(impact, names)),
        "</ul>",
        f'<img src="data:image/png;base64,{png}" alt="partition-seconds without a leader per placer and '
        'election policy, one panel per failure kind">',
        '<p class="note">Each failure runs through the controller\'s own dynamics and election code on a '
        "virtual clock. Cell: partition-seconds without a leader (no leader, or a leader whose broker is "
        "down), mean over the runs, on the colour bar's scale (darker is worse); outlined: the fewest in the "
        "panel, every cell that ties for it. A tie on that figure is broken by the fewest partitions offline "
        "at the worst moment, then the fewest under-replicated partition-seconds; the sentences above say "
        "which did. The table gives every figure, and the static formula's beside them (static "
        "disagreements: runs where the static formula's offline partitions or busiest broker differ from "
        "the simulation's).</p>",
    ]
