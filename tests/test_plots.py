"""The figures: counts and Wilson intervals annotated, percent scales, error bars that are the
Wilson intervals, count labels that neither overlap nor leave the axes, paper sizes, 300 dpi PNG
plus PDF and SVG, byte-identical across processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from transnli.evaluator import plots
from transnli.evaluator.metrics import TripleLabels, dataset_metrics, wilson_interval

E, N, C = "entailment", "neutral", "contradiction"


def rows(rule1=(0, 0), rule2=(0, 0), neutral=0):
    """TripleLabels giving rule1 and rule2 (cases, violations), plus `neutral` triples without a
    rule (so the mutual rates have a denominator beyond the cases)."""
    out = []
    for (cases, bad), mutual, ok in ((rule1, E, E), (rule2, C, C)):
        out += [TripleLabels(E, mutual, mutual, N if i < bad else ok) for i in range(cases)]
    out += [TripleLabels(N, N, N) for _ in range(neutral)]
    return out


def make_summary():
    """Two models x two datasets; "beta" has no rule2 case for model A (grey cell, n/a bar)."""
    spec = {
        "hf:/models/model-a": {
            "alpha": rows((249, 241), (4, 3), 7),
            "beta": rows((3, 3), (0, 0), 2),
        },
        "precomputed:/labels/model-b.jsonl": {
            "alpha": rows((240, 12), (10, 5), 10),
            "beta": rows((3, 0), (2, 1), 0),
        },
    }
    models = []
    for name, per in spec.items():
        models.append(
            {
                "model": name,
                "datasets": [{"dataset": d, **dataset_metrics(r)} for d, r in per.items()],
                "overall": dataset_metrics([x for r in per.values() for x in r]),
            }
        )
    return {"models": models, "datasets": ["alpha", "beta"]}


@pytest.fixture(scope="module")
def summary():
    return make_summary()


@pytest.fixture(scope="module")
def reference_files(summary, tmp_path_factory):
    """Every figure of `summary`, drawn once in this process by write_plots (the Python API's
    path): the files the other processes' must equal, byte for byte."""
    return plots.write_plots(summary, tmp_path_factory.mktemp("reference") / "plots")


def texts(fig):
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def test_heatmap_cells_show_rate_counts_and_interval(summary):
    with plots.style():
        fig = plots.heatmap_figure(summary)
    strings = [t.get_text() for t in texts(fig)]
    lo, hi = (100 * x for x in wilson_interval(241, 249))
    assert f"96.8% (241/249)\n[{lo:.1f}, {hi:.1f}]" in strings
    assert "100.0% (3/3)\n[43.9, 100.0]" in strings  # 3/3 and 241/249 no longer look alike
    assert "no case (0/0)" in strings  # beta, model A, rule2 (and the rules nobody triggers)
    assert any(s.startswith("rule2\nE&C→C") for s in strings)
    assert {"alpha", "beta", "model-a", "model-b"} <= set(strings)
    bar = fig.axes[-1]  # the colour bar: percent, like the cells
    assert bar.get_ylabel() == "violation rate (%)" and bar.get_ylim() == (0.0, 100.0)
    assert fig.get_figwidth() == plots.FULL_IN
    assert min(t.get_fontsize() for t in texts(fig)) >= 7


@pytest.mark.parametrize("build", [plots.mutual_figure, plots.comparison_figure])
def test_bars_have_wilson_error_bars_and_counts(summary, build):
    from matplotlib.container import ErrorbarContainer

    with plots.style():
        fig = build(summary)
    assert fig.get_figwidth() in (plots.COLUMN_IN, plots.FULL_IN)
    assert min(t.get_fontsize() for t in texts(fig)) >= 7
    strings = {t.get_text() for t in texts(fig)}
    assert "100" in strings  # percent, not 1.0
    assert {"model-a", "model-b"} <= strings  # legend, short names
    segments = []
    for ax in fig.axes:
        assert list(ax.get_yticks())[-1] == 100 and ax.get_ylabel() in (
            "",
            "share of triples (%)",
            "violation rate (%)",
        )
        for container in ax.containers:
            if isinstance(container, ErrorbarContainer):
                segments += [
                    tuple(float(v) for v in seg[:, 1])
                    for seg in container.lines[2][0].get_segments()
                ]
    if build is plots.comparison_figure:  # pooled: model A rule1 244/252, model B rule2 6/12
        expected = [(244, 252), (3, 4), (12, 243), (6, 12)]
        assert {"244/252", "3/4", "12/243", "6/12"} <= strings
    else:  # mutual entailment of model A on alpha: 249 of 260 triples; contradiction 4 of 260
        expected = [(249, 260), (4, 260), (3, 5), (0, 5), (240, 260), (2, 5)]
        assert {"249/260", "4/260", "3/5", "0/5", "2/5"} <= strings
    for k, n in expected:
        lo, hi = wilson_interval(k, n)
        assert any(abs(a - 100 * lo) < 1e-9 and abs(b - 100 * hi) < 1e-9 for a, b in segments), (
            k,
            n,
        )


def test_count_labels_neither_overlap_nor_leave_the_axes(summary):
    with plots.style():
        for build in (plots.mutual_figure, plots.comparison_figure):
            fig = build(summary)
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            for ax in fig.axes:
                labels = [t for t in ax.texts if "/" in t.get_text() or t.get_text() == "n/a"]
                assert labels
                boxes = [t.get_window_extent(renderer) for t in labels]
                top = ax.get_window_extent(renderer).y1
                assert all(b.y1 <= top + 0.5 for b in boxes)
                for i, a in enumerate(boxes):
                    for b in boxes[i + 1 :]:
                        assert not a.overlaps(b), (a, b)
    one = {**summary, "models": summary["models"][:1]}
    with plots.style():
        fig = plots.comparison_figure(one)
    assert {t.get_rotation() for t in fig.axes[0].texts} == {0.0}  # room enough: labels stay flat


def test_files_in_three_formats_paper_sized(reference_files):
    from PIL import Image

    files = reference_files
    names = sorted(p.name for p in files)
    assert names == sorted(
        f"{stem}.{fmt}"
        for stem in ("violation_heatmap", "mutual_rates", "model_comparison")
        for fmt in ("png", "pdf", "svg")
    )
    for path in files:
        data = path.read_bytes()
        if path.suffix == ".png":
            with Image.open(path) as im:
                assert im.info["dpi"] == pytest.approx((300, 300), abs=0.01)
                assert im.size[0] in (round(300 * plots.COLUMN_IN), round(300 * plots.FULL_IN))
            assert b"Software" not in data
        elif path.suffix == ".pdf":
            assert data.startswith(b"%PDF") and b"CreationDate" not in data
            assert b"/FontFile2" in data and b"/Type3" not in data  # TrueType embedded, no Type 3
        else:
            assert data.lstrip().startswith(b"<?xml") and b"<dc:date>" not in data


def test_bytes_are_identical_across_processes(summary, reference_files, tmp_path):
    # a fresh interpreter (its own hash seed, nothing drawn before) against this process
    source = tmp_path / "summary.json"
    source.write_text(json.dumps(summary))
    script = (
        "import json, sys, pathlib; from transnli.evaluator import plots; "
        "plots.write_plots(json.load(open(sys.argv[1])), pathlib.Path(sys.argv[2]))"
    )
    subprocess.run([sys.executable, "-c", script, str(source), str(tmp_path / "fresh")], check=True)
    files = sorted(p.name for p in (tmp_path / "fresh").iterdir())
    assert files == sorted(p.name for p in reference_files) and len(files) == 9
    for path in reference_files:
        assert (tmp_path / "fresh" / path.name).read_bytes() == path.read_bytes(), path.name


def test_short_names():
    assert plots.short_names(["hf:/m/roberta-large-mnli/", "precomputed:/x/labels.jsonl"]) == [
        "roberta-large-mnli",
        "labels",
    ]
    assert plots.short_names(["hf:/a/m", "hf:/b/m"]) == [
        "hf:/a/m",
        "hf:/b/m",
    ]  # would clash: kept whole
    assert plots.short_names(
        ["hf:roberta-large-mnli", "precomputed:labels.jsonl", "llm:openai:gpt-4o"]
    ) == ["roberta-large-mnli", "labels", "llm:openai:gpt-4o"]
    assert plots.legend_columns(["a", "b", "c"], plots.COLUMN_IN) == 3
    assert plots.legend_columns(["x" * 40] * 3, plots.COLUMN_IN) == 1


def test_the_plot_worker_writes_the_files_this_process_would(summary, reference_files, tmp_path):
    # the command line renders the PDFs on a worker process: the same files, byte for byte, as a
    # run without one (the Python API), listed in write_plots' order
    from transnli.evaluator.plot_worker import PlotWorker, write_figures

    alone = reference_files  # write_figures without a worker is write_plots
    worker = PlotWorker().start()
    try:
        (tmp_path / "shared").mkdir()
        shared = write_figures(
            summary, tmp_path / "shared", worker, worker.render(summary, tmp_path / "shared")
        )
    finally:
        worker.close()
    assert [p.name for p in shared] == [p.name for p in alone]
    assert [p.suffix for p in alone[:3]] == [".png", ".pdf", ".svg"] and len(alone) == 9
    for path in alone:
        assert (tmp_path / "shared" / path.name).read_bytes() == path.read_bytes(), path.name


def test_a_dead_plot_worker_leaves_the_figures_to_this_process(summary, reference_files, tmp_path):
    from transnli.evaluator.plot_worker import PlotWorker, write_figures

    worker = PlotWorker().start()
    try:
        for process in list(worker._pool._processes.values()):
            process.kill()
            process.join()
        files = write_figures(summary, tmp_path, worker, worker.render(summary, tmp_path))
    finally:
        worker.close()
    assert [p.name for p in files] == [p.name for p in reference_files]
    for path in reference_files:  # drawn here instead: the same bytes
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def summary_of(spec):
    """A summary from {model: {dataset: rows}} (as make_summary builds its own)."""
    models = [
        {
            "model": name,
            "datasets": [{"dataset": d, **dataset_metrics(r)} for d, r in per.items()],
            "overall": dataset_metrics([x for r in per.values() for x in r]),
        }
        for name, per in spec.items()
    ]
    return {"models": models, "datasets": list(next(iter(spec.values())))}


def luminance(rgba):
    return 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]


def test_heatmap_colours_separate_0_5_and_15_percent_even_beside_100():
    # rule1 0/20, rule2 1/20 (5%) for model a; rule1 3/20 (15%), rule2 2/2 (100%) for model b:
    # on the old linear 0-100 red scale 0% and 15% differed by 0.09 in luminance (both near white)
    data = summary_of(
        {
            "hf:/m/a": {"alpha": rows((20, 0), (20, 1))},
            "hf:/m/b": {"alpha": rows((20, 3), (2, 2))},
        }
    )
    with plots.style():
        fig = plots.heatmap_figure(data)
    image = fig.axes[0].images[0]
    colours = image.to_rgba(image.get_array())
    lum = {
        rate: luminance(colours[i, j])
        for rate, (i, j) in {0: (0, 0), 5: (0, 1), 15: (1, 0)}.items()
    }
    assert lum[0] - lum[5] >= 0.15 and lum[5] - lum[15] >= 0.15, lum
    # the numbers are printed in the cells, and the colour bar ends at the largest rate
    strings = [t.get_text() for t in texts(fig)]
    assert any(s.startswith("5.0% (1/20)") for s in strings)
    assert any(s.startswith("15.0% (3/20)") for s in strings)
    assert fig.axes[-1].get_ylim() == (0.0, 100.0)


def test_heatmap_scale_ends_at_the_largest_rate_and_no_case_is_hatched():
    data = summary_of(
        {"hf:/m/a": {"alpha": rows((20, 0), (20, 1))}, "hf:/m/b": {"alpha": rows((20, 3))}}
    )
    with plots.style():
        fig = plots.heatmap_figure(data)
    assert fig.axes[-1].get_ylim() == (0.0, 20.0)  # 15% is the largest: the scale ends at 20%
    image = fig.axes[0].images[0]
    lum15 = luminance(image.to_rgba(image.get_array())[1, 0])
    assert lum15 < 0.35  # 15% of a 0-20% scale is a dark red, not near white
    # rule3 and rule4 (and rule2 of model b): no case, hatched, so no colour stands for them
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert len(hatched) == 2 * 2 + 1
    assert "hatched: no case" in fig.get_supxlabel()


def zero_bar_segments(fig):
    from matplotlib.collections import LineCollection

    return [
        (c, seg)
        for ax in fig.axes
        for c in ax.findobj(LineCollection)
        if c.get_gid() == "zero-bar"
        for seg in c.get_segments()
    ]


def test_zero_bars_are_drawn_in_their_models_colour():
    from matplotlib.colors import to_hex

    # model b: 0/20 on rule1 and 0/5 on rule2; model a: 4/20 and 1/5
    data = summary_of(
        {
            "hf:/m/a": {"alpha": rows((20, 4), (5, 1))},
            "hf:/m/b": {"alpha": rows((20, 0), (5, 0))},
        }
    )
    with plots.style():
        fig = plots.comparison_figure(data)
    ax = fig.axes[0]
    zeros = zero_bar_segments(fig)
    assert len(zeros) == 2
    labels = {t.get_text(): t.get_position()[0] for t in ax.texts}
    assert {"0/20", "0/5"} <= set(labels)
    for collection, seg in zeros:
        assert to_hex(collection.get_colors()[0]) == plots.PALETTE[1].lower()
        (x0, y0), (x1, y1) = seg
        assert y0 == y1 == 0 and x1 - x0 > 0.1  # as wide as a bar, on the axis
        assert any(abs((x0 + x1) / 2 - x) < 1e-9 for k, x in labels.items() if k.startswith("0/"))
    assert "0/total" in fig.get_supxlabel()


def test_a_model_without_any_bar_keeps_its_colour_in_the_legend():
    # model b has no rule case at all (every bar n/a): its legend entry was drawn in model a's blue
    from matplotlib.colors import to_hex

    data = summary_of(
        {
            "hf:/m/a": {"alpha": rows((20, 4), (5, 1))},
            "hf:/m/b": {"alpha": rows(neutral=5)},
            "hf:/m/c": {"alpha": rows((20, 1))},
        }
    )
    with plots.style():
        fig = plots.comparison_figure(data)
    (legend,) = fig.legends
    colours = [to_hex(h.get_facecolor()) for h in legend.legend_handles]
    assert colours == [c.lower() for c in plots.PALETTE[:3]]
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b", "c"]


@pytest.mark.parametrize("n_models", [1, 2, 4])
@pytest.mark.parametrize("worst", [(2, 2), (20, 9), (20, 3)])
def test_the_heatmap_colour_bar_labels_never_overlap(n_models, worst):
    """Issue 38: on the square-root scale the labels 0, 1, 2 and 5 overlapped at the bottom of a
    short bar; the bar labels only the ticks its height has room for, 0 and its top always."""
    spec = {f"hf:/m/{i}": {"alpha": rows((20, i), worst)} for i in range(n_models)}
    with plots.style():
        fig = plots.heatmap_figure(summary_of(spec))
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
    bar = fig.axes[-1]
    labels = [t for t in bar.get_yticklabels() if t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), [t.get_text() for t in labels]
    values = [float(t.get_text()) for t in labels]
    assert values[0] == 0 and values[-1] == bar.get_ylim()[1] and len(values) >= 3
