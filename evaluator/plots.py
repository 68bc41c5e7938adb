"""Figures for a paper: plots/*.png (300 dpi), *.pdf and *.svg.

- violation_heatmap: violation rate per model x rule, one panel per dataset; every cell says
  "rate (violations/cases)" and the Wilson 95% interval, so 3/3 and 241/249 do not look alike;
  the colour scale runs from 0 to the largest rate shown (rounded up) on a square-root scale, so
  that 0%, 5% and 15% differ at a glance even beside a 100% cell;
- mutual_rates: mutual entailment and contradiction rates of (H,H') per dataset and model, with
  Wilson 95% error bars and the counts;
- model_comparison: violation rate per rule, models side by side (all datasets pooled), with
  Wilson 95% error bars and the counts;
- alarm_curve (two or more models): the no-knowledge alarm's curve per dataset and kind of pair,
  with theta* (M = 1) where it starts and theta* (M = 2) dashed (the data: alarm_report.py).

A bar of 0/n is drawn as a thick line on the axis in the model's colour (a bar of no height would
leave its error bar standing alone).

Percent everywhere (cells, axes, colour bar). Sizes follow a two-column paper: 3.3 in (one
column) or 7 in (both), text 7-8 pt. Each function returns the matplotlib Figure (no pyplot
state), so callers and tests can inspect its artists; `write_plots` saves them. The PDF and SVG are
byte-identical across runs (no creation date, a fixed SVG hash salt, TrueType fonts embedded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .formatting import pct
from .metrics import wilson_interval
from .rules import RULES
from .schedule import KIND_TITLES, KINDS

COLUMN_IN = 3.3  # one column of a two-column paper (ACL, NeurIPS-style two-column venues)
FULL_IN = 7.0  # both columns
FORMATS = ("png", "pdf", "svg")
PNG_DPI = 300
# Okabe-Ito: distinguishable with the common colour-vision deficiencies and in greyscale order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
STYLE = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs on every machine
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.titlesize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "lines.linewidth": 0.8,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,  # TrueType, not Type 3 (venues' PDF checkers refuse it)
    "svg.hashsalt": "transnli",  # fixed ids inside the SVG: byte-identical files
    "figure.dpi": 100,
    "savefig.dpi": PNG_DPI,
}
CELL_FONT = 7
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 0.4}  # hides grid lines behind
BAR_NOTE = (
    "labels: count/total; error bars: Wilson 95% interval\nline on the axis: a bar of 0/total"
)
HEATMAP_NOTE = (
    "cells: violation rate (violations/cases) and Wilson 95% interval; colour: square-root scale "
    "from 0 to the largest rate; hatched: no case"
)
# The heatmap's colour scale ends at the first of these at or above the largest rate shown.
HEATMAP_TOPS = (5.0, 10.0, 20.0, 50.0, 100.0)
# The colour bar's ticks, most wanted first: a short bar keeps those that fit (colour_bar_ticks).
HEATMAP_TICKS = (0, 100, 50, 20, 10, 5, 1, 2, 75, 30)
# sqrt: low rates get most of the colour range, where models differ (0% vs 5% vs 15%)
HEATMAP_GAMMA = 0.5
NO_CASE_HATCH = {"facecolor": "white", "edgecolor": "#bbbbbb", "hatch": "////", "linewidth": 0}
ZERO_BAR_WIDTH = 1.6  # points: the line that stands for a 0/n bar
METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}


def short_name(spec: str) -> str:
    """ "hf:/models/roberta-large-mnli" -> "roberta-large-mnli"; "precomputed:x/b.jsonl" -> "b"."""
    name = spec.rstrip("/").replace("\\", "/").split("/")[-1] or spec
    for prefix in ("hf:", "precomputed:"):  # "hf:roberta-large-mnli" (llm:... keeps its prefix)
        name = name.removeprefix(prefix)
    return name.removesuffix(".jsonl") or spec


def short_names(specs: Sequence[str]) -> list[str]:
    """Each spec's short_name, unless two models would then share a name (then the specs)."""
    short = [short_name(s) for s in specs]
    return short if len(set(short)) == len(short) else list(specs)


def rule_title(rule) -> str:
    return f"{rule.key}\n{rule.name.replace('->', '→')}"


def _pct_ci(k: int, n: int) -> tuple[float, float, float] | None:
    """(rate, low, high) in percent, or None when n == 0."""
    ci = wilson_interval(k, n)
    if ci is None:
        return None
    return 100 * k / n, 100 * ci[0], 100 * ci[1]


def _text_colour(rgba) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"


def _percent_axis(ax, top: float = 100.0) -> None:
    """y from 0 to `top` percent with ticks there only (the room above holds the count labels)."""
    step = 20 if top > 50 else 10 if top > 25 else 5
    ticks = [step * i for i in range(int(top // step) + 1)]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_ylim(0, top)
    ax.spines["left"].set_bounds(0, top)


def fit_count_labels(fig, labelled: Sequence[tuple[Any, list, float]]) -> None:
    """Make the count labels above bars readable: measured after a layout pass, labels that would
    touch a neighbour turn upright (in every panel, for one look), and the y axes grow just
    enough to hold them (together: panels share their scale). `labelled`: (axes, its labels, the
    width of one bar's slot in data units)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    crowded = False
    for ax, texts, slot in labelled:
        # a label wider than its bar's slot would run into the neighbour's error bar or label
        x0, x1 = ax.transData.transform([(0, 0), (slot, 0)])[:, 0]
        crowded |= any(t.get_window_extent(renderer).width > 0.98 * (x1 - x0) for t in texts)
    if crowded:
        for _ax, texts, _slot in labelled:
            for t in texts:
                t.set_rotation(90)
        fig.canvas.draw()
    need = max(ax.get_ylim()[1] for ax, _, _ in labelled)
    for ax, texts, _slot in labelled:
        height_px = ax.get_window_extent(renderer).height
        for t in texts:
            # a label of h pixels anchored at y fits below the top when y <= top * (1 - h/H)
            share = t.get_window_extent(renderer).height / height_px
            need = max(need, t.get_position()[1] / max(0.2, 1.0 - share - 0.02))
    for ax, _, _ in labelled:
        ax.set_ylim(0, need)


def legend_columns(names: Sequence[str], width_in: float) -> int:
    """As many legend columns as the figure's width holds (entries are as wide as the longest)."""
    entry_in = 0.45 + 0.06 * max((len(n) for n in names), default=1)  # 7 pt glyphs ~0.06 in
    return max(1, min(len(names), int((width_in - 0.1) // entry_in)))


def _axis_top(highs: Sequence[float]) -> float:
    """A round upper limit for percent axes: 100 unless every interval ends well below it."""
    top = max(highs, default=0.0)
    for limit in (10, 25, 50):
        if top <= limit * 0.95:
            return float(limit)
    return 100.0


# --------------------------------------------------------------------------- heatmap
def _heatmap_cells(models: Sequence[dict], dataset: str):
    """(rates in percent, NaN where no case; the cells' texts) of one dataset's panel."""
    import numpy as np

    data = np.full((len(models), len(RULES)), np.nan)
    labels: list[list[str]] = []
    for i, m in enumerate(models):
        entry = next(e for e in m["datasets"] if e["dataset"] == dataset)
        row = []
        for j, rule in enumerate(RULES):
            cell = entry["rules"][rule.key]
            got = _pct_ci(cell["violations"], cell["cases"])
            if got is None:
                row.append("no case (0/0)")
                continue
            data[i, j] = got[0]
            row.append(
                f"{got[0]:.1f}% ({cell['violations']}/{cell['cases']})\n"
                f"[{got[1]:.1f}, {got[2]:.1f}]"
            )
        labels.append(row)
    return data, labels


def heatmap_scale(summary: dict[str, Any]):
    """(colour map, norm) of the heatmap: sequential, from 0 to the first of HEATMAP_TOPS at or
    above the largest rate shown, on a square-root scale."""
    import matplotlib
    from matplotlib.colors import PowerNorm

    rates = [
        100 * cell["violations"] / cell["cases"]
        for m in summary["models"]
        for e in m["datasets"]
        for cell in e["rules"].values()
        if cell["cases"]
    ]
    top = next(t for t in HEATMAP_TOPS if t >= max(rates, default=0.0))
    cmap = matplotlib.colormaps["Reds"].with_extremes(bad="white")
    return cmap, PowerNorm(HEATMAP_GAMMA, vmin=0.0, vmax=top)


def colour_bar_ticks(norm, height_pt: float, font_pt: float) -> list[float]:
    """The HEATMAP_TICKS a colour bar `height_pt` points tall can label without two labels
    touching (on the square-root scale 0, 1, 2 and 5 crowd the bottom of a short bar): 0 and the
    top always, then the others in HEATMAP_TICKS' order, each kept only with a label's height (and
    a little) between it and every tick kept."""
    gap = 1.3 * font_pt / max(height_pt, 1.0)  # in the bar's 0-1 coordinates
    ticks = [t for t in HEATMAP_TICKS if t <= norm.vmax]
    kept = [0.0, float(norm.vmax)]
    for t in ticks:
        if all(abs(norm(t) - norm(k)) >= gap for k in kept):
            kept.append(float(t))
    return sorted(kept)


def _heatmap_panel(ax, data, labels, cmap, norm, names: Sequence[str]):
    import numpy as np
    from matplotlib.patches import Rectangle

    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=norm, aspect="auto")
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            empty = bool(np.isnan(data[i, j]))
            if empty:  # hatched: no colour of the scale can be mistaken for it
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, zorder=1, **NO_CASE_HATCH))
            colour = "black" if empty else _text_colour(cmap(norm(data[i, j])))
            ax.text(
                j,
                i,
                labels[i][j],
                ha="center",
                va="center",
                fontsize=CELL_FONT,
                color=colour,
                linespacing=1.15,
                bbox=LABEL_BOX if empty else None,
                zorder=3,
            )
    ax.set_yticks(range(len(names)), names)
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    # thin white lines between cells
    ax.set_xticks(np.arange(-0.5, len(RULES)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(names)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    return image


def heatmap_figure(summary: dict[str, Any]):
    """Violation rate per model (rows) x rule (columns), one panel per dataset; each cell shows
    "rate% (k/n)" and the Wilson interval; hatched cells: no case."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = summary["models"]
    datasets = summary["datasets"]
    names = short_names([m["model"] for m in models])
    cmap, norm = heatmap_scale(summary)
    row_in = 0.34
    height = 0.55 + len(datasets) * (0.3 + row_in * len(models)) + 0.25
    fig = Figure(figsize=(FULL_IN, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(datasets), 1, squeeze=False, sharex=True)[:, 0]
    image = None
    for ax, dataset in zip(axes, datasets, strict=True):
        data, labels = _heatmap_cells(models, dataset)
        image = _heatmap_panel(ax, data, labels, cmap, norm, names)
        ax.set_xticks(range(len(RULES)), [rule_title(r) for r in RULES])
        ax.tick_params(
            axis="x", top=True, labeltop=ax is axes[0], bottom=False, labelbottom=False, length=0
        )
        ax.set_title(dataset, loc="left", fontweight="bold", pad=3)
    bar = fig.colorbar(
        image, ax=list(axes), fraction=0.04, pad=0.015, aspect=max(8, 6 * len(datasets))
    )
    bar.set_label("violation rate (%)")
    bar.ax.yaxis.set_major_formatter("{x:g}")
    fig.draw_without_rendering()  # lays the figure out: the bar's height decides its ticks
    height_pt = bar.ax.get_window_extent().height * 72 / fig.dpi
    font_pt = bar.ax.yaxis.get_ticklabels()[0].get_fontsize()
    bar.set_ticks(colour_bar_ticks(norm, height_pt, font_pt))
    bar.outline.set_linewidth(0.5)
    fig.supxlabel(HEATMAP_NOTE, fontsize=CELL_FONT, color="#444444")
    return fig


# --------------------------------------------------------------------------- bars
def _grouped_bars(
    ax, groups: Sequence[str], series: Sequence[tuple[str, list[tuple[int, int]]]], top: float
) -> tuple[list, float]:
    """Bars of k/n in percent for each (name, [(k, n) per group]) with Wilson 95% error bars and
    "k/n" above each; a group where n == 0 gets "n/a" in place of a bar. Returns the labels and
    the width of one bar's slot (for fit_count_labels)."""
    n_series = max(1, len(series))
    # one bar alone would fill its panel: keep it as narrow as one of a pair
    width = 0.8 / max(n_series, 2 if len(groups) == 1 else 1)
    labels = []
    for s, (name, counts) in enumerate(series):
        xs, rates, errs, texts, empty = [], [], [[], []], [], []
        for g, (k, n) in enumerate(counts):
            x = g + (s - (n_series - 1) / 2) * width
            got = _pct_ci(k, n)
            if got is None:
                empty.append(x)
                continue
            xs.append(x)
            rates.append(got[0])
            errs[0].append(got[0] - got[1])
            errs[1].append(got[2] - got[0])
            texts.append((x, got[2], f"{k}/{n}"))
        colour = PALETTE[s % len(PALETTE)]
        ax.bar(xs, rates, width * 0.92, color=colour, label=name, zorder=2)
        zeros = [x for x, rate in zip(xs, rates, strict=True) if rate == 0]
        if zeros:  # a 0/n bar has no height: a thick line on the axis stands for it
            ax.hlines(
                [0.0] * len(zeros),
                [x - width * 0.46 for x in zeros],
                [x + width * 0.46 for x in zeros],
                colors=colour,
                linewidth=ZERO_BAR_WIDTH,
                clip_on=False,
                zorder=4,
                gid="zero-bar",
            )
        ax.errorbar(
            xs,
            rates,
            yerr=errs,
            fmt="none",
            ecolor="black",
            elinewidth=0.7,
            capsize=1.8,
            capthick=0.7,
            zorder=3,
        )
        for x, y, text in texts:
            labels.append(
                ax.text(
                    x,
                    y + top * 0.03,
                    text,
                    ha="center",
                    va="bottom",
                    fontsize=CELL_FONT,
                    bbox=LABEL_BOX,
                )
            )
        for x in empty:
            labels.append(
                ax.text(
                    x,
                    top * 0.015,
                    "n/a",
                    ha="center",
                    va="bottom",
                    fontsize=CELL_FONT,
                    color="#555555",
                )
            )
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.tick_params(axis="x", length=0)
    ax.yaxis.grid(True, color="#dddddd", linewidth=0.5, zorder=0)
    ax.set_axisbelow(True)
    _percent_axis(ax, top)
    return labels, width


def _legend_and_note(fig, ax, names, with_legend: bool) -> None:
    """The models' legend above the bars (when there are several) and the bars' note below."""
    if with_legend:
        from matplotlib.patches import Patch

        # handles made here: a model whose every bar is n/a has no bar to take its colour from
        handles = [Patch(color=PALETTE[s % len(PALETTE)]) for s in range(len(names))]
        fig.legend(
            handles,
            names,
            loc="outside upper center",
            ncol=legend_columns(names, fig.get_figwidth()),
            frameon=False,
        )
    fig.supxlabel(BAR_NOTE, fontsize=CELL_FONT, color="#444444")


def mutual_figure(summary: dict[str, Any]):
    """Mutual entailment and mutual contradiction rates of (H,H'): one panel each, a group of bars
    per dataset, one bar per model, Wilson 95% error bars, k/n above each bar."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = summary["models"]
    datasets = summary["datasets"]
    names = short_names([m["model"] for m in models])
    panels = []
    highs = []
    for which in ("entailment", "contradiction"):
        series = []
        for m, name in zip(models, names, strict=True):
            by_ds = {e["dataset"]: e for e in m["datasets"]}
            counts = [(by_ds[d][f"mutual_{which}"], by_ds[d]["n_triples"]) for d in datasets]
            highs += [got[2] for k, n in counts if (got := _pct_ci(k, n))]
            series.append((name, counts))
        panels.append((which, series))
    top = _axis_top(highs)  # one scale for both panels: their bars compare
    wide = len(datasets) * len(models) > 6
    fig = Figure(figsize=(FULL_IN if wide else COLUMN_IN, 2.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    labelled = []
    for ax, (which, series) in zip(axes, panels, strict=True):
        labelled.append((ax, *_grouped_bars(ax, datasets, series, top)))
        ax.set_title(f"mutual {which}")
    axes[0].set_ylabel("share of triples (%)")
    _legend_and_note(fig, axes[0], names, len(models) > 1)
    fit_count_labels(fig, labelled)
    return fig


def comparison_figure(summary: dict[str, Any]):
    """Violation rate per rule (all datasets pooled), one bar per model, Wilson 95% error bars and
    k/n above each bar: the models side by side."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = summary["models"]
    names = short_names([m["model"] for m in models])
    series, highs = [], []
    for m, name in zip(models, names, strict=True):
        counts = [
            (m["overall"]["rules"][r.key]["violations"], m["overall"]["rules"][r.key]["cases"])
            for r in RULES
        ]
        highs += [got[2] for k, n in counts if (got := _pct_ci(k, n))]
        series.append((name, counts))
    wide = len(models) > 3
    fig = Figure(figsize=(FULL_IN if wide else COLUMN_IN, 2.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    labels, slot = _grouped_bars(ax, [rule_title(r) for r in RULES], series, _axis_top(highs))
    ax.set_ylabel("violation rate (%)")
    n = sum(e["n_triples"] for e in models[0]["datasets"]) if models else 0
    pooled = "all datasets" if len(summary["datasets"]) > 1 else summary["datasets"][0]
    ax.set_title(f"Rule violations, {pooled} ({n} triples)")
    _legend_and_note(fig, ax, names, len(models) > 1)
    fit_count_labels(fig, [(ax, labels, slot)])
    return fig


# --------------------------------------------------------------------------- alarm curve
CURVE_TITLE = "No-knowledge alarm: how accurate could every model be? (no gold labels)"
CURVE_NOTE = (
    "x: possible true label counts, most favourable first; solid: M = 1 curve, from θ* (dot) "
    "down;\ndashed: θ* (M = 2, pair counts), the proven bound: an alarm threshold above it fires"
)


def _alarm_panel(ax, entries: Sequence[Mapping[str, Any]], kinds: Sequence[str]) -> None:
    from .alarm_report import curve_points  # numpy and the alarms: only when there is a curve

    handles, names = [], []
    for e in entries:
        colour = PALETTE[kinds.index(e["pairs"]) % len(PALETTE)]
        xs, ys = curve_points(e)
        (line,) = ax.step(xs, ys, where="pre", color=colour, linewidth=1.0)
        ax.plot(xs[:1], ys[:1], "o", color=colour, markersize=3)
        m2 = (e.get("m2_pairs") or {}).get("theta_star")
        label = f"{KIND_TITLES[e['pairs']]}: θ* {pct(e['theta_star'])}"
        if m2 is not None:
            ax.axhline(100 * m2, color=colour, linestyle="--", linewidth=0.8)
            label += f", M = 2: {pct(m2)}"
        handles.append(line)
        names.append(label)
    # an opaque box: curves that fall at once run through the lower left corner
    ax.legend(
        handles,
        names,
        loc="lower left",
        handlelength=1.2,
        facecolor="white",
        edgecolor="none",
        framealpha=1.0,
    )
    ax.set_xscale("log")
    # room left of the first key: a curve that falls there at once is not hidden by the y axis
    ax.set_xlim(min(100.0 / e["answer_keys"] for e in entries) / 2, 100)
    ax.xaxis.set_major_formatter("{x:g}")
    ax.set_ylim(0, 100)
    ax.set_yticks(range(0, 101, 20))
    ax.yaxis.grid(True, color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)


def alarm_curve_figure(summary: Mapping[str, Any]):
    """plots/alarm_curve.{png,pdf,svg}, one panel per dataset: for each kind of pair, the
    accuracy (y, %) that every model can still reach on every label at a given share of the
    possible true label counts (x, %, most favourable first, log scale): the paper's Fig. 7 sorted
    curve. It starts at theta* (M = 1); the dashed line is theta* (M = 2), the bound report.md
    and `transnli alarm` give. None without alarms (no figure is written)."""
    section = summary.get("alarms")
    shown = [e for e in (section or {}).get("results", []) if "curve" in e]
    if not shown:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    datasets = list(dict.fromkeys(e["dataset"] for e in shown))
    kinds = [k for k in KINDS if any(e["pairs"] == k for e in shown)]
    cols = min(len(datasets), 2)
    rows = -(-len(datasets) // cols)
    fig = Figure(
        figsize=(FULL_IN if cols > 1 else COLUMN_IN, 0.9 + 2.2 * rows), layout="constrained"
    )
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    for ax, dataset in zip(axes.flat, datasets, strict=False):
        _alarm_panel(ax, [e for e in shown if e["dataset"] == dataset], kinds)
        ax.set_title(dataset, loc="left", fontweight="bold")
        ax.set_xlabel("share of possible true label counts (%, log)")
    for ax in axes.flat[len(datasets) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy every model could\nhave on every label (%)")
    fig.suptitle(CURVE_TITLE)
    fig.supxlabel(CURVE_NOTE, fontsize=CELL_FONT, color="#444444")
    return fig


# --------------------------------------------------------------------------- files
FIGURES = {
    "violation_heatmap": heatmap_figure,
    "mutual_rates": mutual_figure,
    "model_comparison": comparison_figure,
}


# Formats drawn from one figure. A figure saved in one format keeps the layout that format's
# renderer measured, so a file depends on the formats saved from the same figure before it; with a
# fixed grouping, every file depends only on the summary, whichever process draws which group (the
# command line renders the PDFs on another process, evaluator/plot_worker.py).
FORMAT_GROUPS = (("png", "svg"), ("pdf",))


def save_figure(
    build: Callable[[], Any], stem: Path, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Write `stem`.<format> for each of `formats`, one figure (`build()`) per FORMAT_GROUPS entry;
    returns the paths (none when `build` returns None). Call inside `style()` (the SVG salt)."""
    paths = []
    for group in FORMAT_GROUPS:
        wanted = [f for f in group if f in formats]
        if not wanted:
            continue
        fig = build()
        if fig is None:
            return []
        for fmt in wanted:
            path = stem.with_name(f"{stem.name}.{fmt}")
            fig.savefig(path, format=fmt, dpi=PNG_DPI, metadata=METADATA[fmt])
            paths.append(path)
    return in_figure_order(paths)


def in_figure_order(paths: Sequence[Path]) -> list[Path]:
    """Figure files in the order write_plots lists them: by figure, then by format (FORMATS)."""
    stems = list(dict.fromkeys(p.stem for p in paths))
    return sorted(paths, key=lambda p: (stems.index(p.stem), FORMATS.index(p.suffix[1:])))


def style():
    """The rc settings every figure is built and saved under (a context manager)."""
    import matplotlib

    return matplotlib.rc_context(STYLE)


def write_plots(
    summary: dict[str, Any], folder: Path, formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Build and save every figure into `folder`; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    builders = {**FIGURES, "alarm_curve": alarm_curve_figure}  # the alarm curve: two or more models
    with style():
        for name, build in builders.items():
            files += save_figure(lambda build=build: build(summary), folder / name, formats)
    return files
