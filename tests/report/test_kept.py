"""Kept plots (verify/report/kept.py): each distinct plot is drawn once per process and once
across runs, placed with ids unique in its page, and the files are only ever a cache."""

from __future__ import annotations

import functools
import os
import re

import pytest

from tests.report.synthetic import FAILING, load_fixture
from verify.report import kept, plots, render_report
from verify.results.store import parse_results

DRAWN = ("err_budget_scatter", "err_budget_histogram", "err_budget_heatmap")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh store: an empty folder on disk and nothing in memory."""
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kept, "_pruned", False)
    kept.forget()
    yield tmp_path / "cache" / "plots"
    kept.forget()


@pytest.fixture
def drawings(monkeypatch):
    """Counts the figures plots.py draws, by plot."""
    counts = dict.fromkeys(DRAWN, 0)
    for name in DRAWN:
        original = getattr(plots, name)

        @functools.wraps(original)
        def counted(*args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(plots, name, counted)
    return counts


def failing_report(tmp_path, name="report.html"):
    render_report([parse_results(load_fixture(FAILING))], tmp_path / name)
    return (tmp_path / name).read_text()


def test_a_report_rendered_again_draws_nothing_and_is_the_same_page(tmp_path, store, drawings):
    first = failing_report(tmp_path, "first.html")
    drawn = dict(drawings)
    assert sum(drawn.values()) > 3 and all(drawn.values())
    second = failing_report(tmp_path, "second.html")
    assert drawings == drawn and second == first


def test_a_later_process_reads_the_plots_from_disk(tmp_path, store, drawings, monkeypatch):
    first = failing_report(tmp_path, "first.html")
    assert len(list(store.glob("*.svg"))) == sum(drawings.values())
    kept.forget()  # as a new process starts
    for name in DRAWN:
        @functools.wraps(getattr(plots, name))
        def refuse(*args, **kwargs):
            raise AssertionError("drawn again")

        monkeypatch.setattr(plots, name, refuse)
    assert failing_report(tmp_path, "second.html") == first


def test_other_data_is_another_plot(store, drawings):
    histogram = {"log10_edges": [-2.0, -1.0, 0.0, 1.0], "counts": [3, 4, 0], "over_budget": 0}
    kept.kept_svg(plots.err_budget_histogram, "a", output="v", histogram=histogram)
    kept.kept_svg(plots.err_budget_histogram, "a", output="v", histogram=dict(histogram, counts=[3, 4, 1]))
    kept.kept_svg(plots.err_budget_histogram, "a", output="s", histogram=histogram)
    assert drawings["err_budget_histogram"] == 3


def test_one_plot_placed_twice_in_a_page_shares_no_id(store):
    points = [(float(x), 10.0 ** -x, x < 4) for x in range(1, 8)]
    first = kept.kept_svg(plots.err_budget_scatter, "r1-scatter", points=points, feature="context", marks={})
    again = kept.kept_svg(plots.err_budget_scatter, "r1-scatter", points=points, feature="context", marks={})
    other = kept.kept_svg(plots.err_budget_scatter, "r2-scatter", points=points, feature="context", marks={})
    assert first == again
    ids = [set(kept._ID.findall(svg)) for svg in (first, other)]
    assert ids[0] and len(ids[0]) == len(ids[1]) and not ids[0] & ids[1]
    for svg, own in zip((first, other), ids):  # every reference points at an id of its own plot
        referenced = set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', svg))
        assert referenced and {name for pair in referenced for name in pair if name} <= own


def test_a_damaged_or_foreign_file_is_drawn_again(tmp_path, store, drawings):
    failing_report(tmp_path)
    drawn = sum(drawings.values())
    for path in store.glob("*.svg"):
        path.write_text("<svg half")
    kept.forget()
    failing_report(tmp_path)
    assert sum(drawings.values()) == 2 * drawn
    assert all(path.read_text().endswith("</svg>") for path in store.glob("*.svg"))


def test_a_folder_that_cannot_be_written_only_means_drawing_again(tmp_path, monkeypatch, drawings):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("VERIFY_CACHE", str(blocker))
    kept.forget()
    html = failing_report(tmp_path)
    assert "could not be drawn" not in html and html.count("<svg") == sum(drawings.values())
    kept.forget()


def test_the_least_recently_used_files_go_beyond_the_limit(store, monkeypatch):
    monkeypatch.setattr(kept, "KEPT_FILES", 3)
    store.mkdir(parents=True)
    for i in range(5):
        (store / f"old{i}.svg").write_text("<svg></svg>")
        os.utime(store / f"old{i}.svg", (1000 + i, 1000 + i))
    kept.kept_svg(plots.err_budget_histogram, "a", output="v",
                  histogram={"log10_edges": [-1.0, 0.0, 1.0], "counts": [2, 1], "over_budget": 1})
    assert sorted(p.name for p in store.glob("*.svg") if p.name.startswith("old")) == ["old3.svg", "old4.svg"]
    assert len(list(store.glob("*.svg"))) == 3


def test_a_plot_that_cannot_be_drawn_is_a_note_and_is_not_kept(tmp_path, store, drawings, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("no figure")

    broken.__name__ = "err_budget_heatmap"
    monkeypatch.setattr(plots, "err_budget_heatmap", broken)
    html = failing_report(tmp_path)
    assert html.count("This plot could not be drawn (ValueError: no figure)") == 2
    assert html.count("<svg") == sum(drawings.values()) and drawings["err_budget_histogram"] == 2
    assert len(list(store.glob("*.svg"))) == sum(drawings.values())


def histograms(count: int) -> list[kept.PlotRequest]:
    return [kept.PlotRequest(plots.err_budget_histogram, f"r{i}",
                             dict(output="v", histogram={"log10_edges": [-2.0, -1.0, 0.0, 1.0],
                                                         "counts": [i + 2, 3, i % 2], "over_budget": i % 2}))
            for i in range(count)]


def test_plots_drawn_by_several_processes_are_those_one_draws(tmp_path, monkeypatch):
    asked = histograms(kept.PARALLEL_FROM + 2)
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "parallel"))
    kept.forget()
    parallel = kept.kept_svgs(asked, processes=2)
    assert len(list((tmp_path / "parallel" / "plots").glob("*.svg"))) == len(asked)
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "serial"))
    kept.forget()
    assert kept.kept_svgs(asked) == parallel and all(svg.startswith("<svg") for svg in parallel)
    kept.forget()


def test_a_pool_that_breaks_leaves_the_drawing_to_this_process(store, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    class Broken:
        def __init__(self, **options):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, *args):
            raise BrokenProcessPool("a drawing process was killed")

    monkeypatch.setattr(kept, "ProcessPoolExecutor", Broken)
    svgs = kept.kept_svgs(histograms(kept.PARALLEL_FROM), processes=4)
    assert all(isinstance(svg, str) and svg.startswith("<svg") for svg in svgs)
