"""The report as a browser shows it: headless Chromium renders a report with a planted failure
(the empty_as_zero mutant of merge_state, tests/fixtures/results) merged after a passing run.

From the DOM Chromium dumps after loading the page: the failure section is the first section,
its first record is there and not folded into a closed <details>, and its plots are SVG with
drawn paths. From a screenshot: the top of the page is not blank and shows colours only the
plots draw (the heatmap's deep red far over budget, the blue below budget of verify/report/plots.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.report.dom import parse
from tests.report.synthetic import FAILING, PASSING, load_fixture
from verify.report import render_report
from verify.results.store import parse_results

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package `chromium`; "
                                "scripts/setup.sh --test installs it)")


def chromium(tmp_path, *arguments) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *arguments],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    render_report([parse_results(load_fixture(PASSING)), parse_results(load_fixture(FAILING))], path)
    return path


def test_failure_section_is_first_and_visible_with_rendered_plots(report, tmp_path):
    result = chromium(tmp_path, "--dump-dom", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = parse(result.stdout)
    main = next(dom.iter("main"))
    sections = [child for child in main.children if child.tag == "section"]
    assert sections and sections[0].attrs.get("id") == "failures"
    failure = next(sections[0].iter("article"), None)
    assert failure is not None and "fail" in failure.attrs["class"].split()
    assert not failure.hidden_by_details
    assert not failure.by_class("reason")[0].hidden_by_details
    plots = [svg for figure in failure.iter("figure") for svg in figure.iter("svg")]
    assert len(plots) >= 3
    for svg in plots:
        assert not svg.hidden_by_details
        assert sum(1 for path in svg.iter("path") if path.attrs.get("d")) > 5


def test_screenshot_shows_the_plots(report, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    result = chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri())
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert (pixels.min(axis=2) < 0.9).mean() > 0.05  # not a blank page
    # The page without its plots has none of the heatmap's deep red and ~1700 pixels of this blue
    # (links); with them, tens of thousands and ~12000.
    assert ((red > 0.35) & (green < 0.12) & (blue < 0.2)).sum() > 2000  # heatmap cells far over budget
    assert ((blue > 0.55) & (red < 0.45) & (green < 0.6)).sum() > 5000  # under-budget bars, points and cells


#: What the page measures once loaded (the report itself runs no script): the window's width, the
#: page's, the elements past the window's right edge, and the tables too wide for their box.
_LAYOUT = """location.protocol === 'file:' && document.readyState === 'complete' && JSON.stringify({
  window: innerWidth, page: document.documentElement.scrollWidth,
  past: [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 0.5)
        .map(e => e.tagName + '.' + e.className + ': ' + e.textContent.trim().slice(0, 60)).slice(0, 12),
  scrolled: [...document.querySelectorAll('.scroll')].filter(b => b.scrollWidth > b.clientWidth)
            .map(b => b.firstElementChild.className)})"""


def test_the_page_fits_a_1200_px_window(tmp_path):
    """A gate merged from four machines, with ORT's long configs, long kernel names, commands,
    skip reasons and known findings' headlines, in a 1200 px window: the page does not scroll
    sideways, nothing lies past the window's edge (long text wraps), and only the metrics tables
    (14 numeric columns) may scroll inside their own box; the known findings' index with its
    finding column, the matrix of four adapters and the pass tables fit."""
    from tests.export.chromium import Chromium
    from tests.report.synthetic import wide_documents

    path = tmp_path / "report.html"
    render_report([parse_results(d) for d in wide_documents()], path)
    with Chromium(path.as_uri(), extra=("--window-size=1200,900",)) as browser:
        layout = json.loads(browser.wait_for(_LAYOUT, timeout=120))
    assert layout["window"] == 1200
    assert layout["page"] <= 1200 and not layout["past"], layout
    assert set(layout["scrolled"]) <= {"metrics"}, layout["scrolled"]
