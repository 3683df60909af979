"""The documentation site and the README front page.

The quick site (``docs/build.py``, notebooks not executed: what ``make docs-quick`` builds) is built once per session
into a scratch folder with ``sphinx -W`` (a warning fails the build), with a small leaderboard records file made here.
Then: every page loads in Debian's chromium (Playwright, no browser download) without a console error, no internal
link or anchor is broken, every image exists and is not empty, the API reference documents every public name (the
method protocol among them), the leaderboard page shows the records' board, and a missing records file gives the
"not generated yet" admonition instead of numbers. The README is a front page of at most 10 KB whose links resolve.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import http.server
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from dpkit.board.records import write_provenance, write_records

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
README_LIMIT = 10 * 1024

_spec = importlib.util.spec_from_file_location("dpkit_docs_build", DOCS / "build.py")
docs_build = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = docs_build  # dataclasses look their module up by name
_spec.loader.exec_module(docs_build)

#: the small board of the leaderboard test: two data sets, one σ, three methods (numbers made up for the test)
BOARD_METHODS = ("trig-I", "marginals-histogram-eps", "kme-synthetic")


def _records():
    """A records table of the published board's form (dpkit.board.records.COLUMNS): 16 repetitions (the
    board's split selection chooses on half of them and judges on the other half; the exact sign test of a verdict
    needs at least 6 judged)."""
    import pandas as pd

    from dpkit.board.records import COLUMNS, check_records

    rows = []
    for ds in ("WDBC", "CSN"):
        for i, (method, privacy) in enumerate(zip(BOARD_METHODS, ("ε-DP", "ε-DP", "(ε,δ)-DP"))):
            for rep, wiggle in enumerate((-0.001, 0.0006, -0.0002, 0.001, -0.0006, 0.0002) * 2 + (0.0004, -0.0004) * 2):
                rows.append({"dataset": ds, "sigma": 4.0, "rep": rep, "method": method, "privacy": privacy,
                             "eps_spent": 1.0, "delta_spent": 0.0 if privacy == "ε-DP" else 1e-3,
                             "abs": 0.05 / (i + 1) + wiggle, "rel": 0.1 / (i + 1) + wiggle,
                             "sup_abs": 0.2 / (i + 1), "centre_abs": 0.03 / (i + 1), "time_s": 1.0, "error_bound": 1e-7,
                             "support_size": 500 * (i + 1), "seeds": "{}",
                             "run_seed": 0, "n_queries": 10_000, "J": 10, "budget_epsilon": 1.0,
                             "budget_delta": 1e-3})
    return check_records(pd.DataFrame(rows, columns=list(COLUMNS)).astype(COLUMNS), source="test records")


def _build(folder: Path) -> dict:
    """Build the quick site into ``folder/out`` (records in ``folder``); the build's record."""
    board = folder / "records.parquet"
    write_records(_records(), board)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Tables 3.2/3.3: the published data/tables/ (the default); the checks: none (they are not published)
    proc = subprocess.run([sys.executable, str(DOCS / "build.py"), "--out", str(folder / "out"), "--board", str(board),
                           "--checks", str(folder / "no-checks.md")],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    return {"returncode": proc.returncode, "log": (proc.stdout + proc.stderr)[-6000:]}


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The quick site's html folder, built once for all xdist workers (a lock and a record in their shared tmp)."""
    base = tmp_path_factory.getbasetemp()
    # under xdist every worker's basetemp is a folder of the session's: their parent is shared by this session only
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "dpkit-docs-site"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record_file = shared / "build.json"
        if not record_file.is_file():
            record_file.write_text(json.dumps(_build(shared)))
        record = json.loads(record_file.read_text())
    assert record["returncode"] == 0, f"docs/build.py (sphinx -W) failed:\n{record['log']}"
    return shared / "out" / "html"


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


class _Refs(HTMLParser):
    """The hrefs, image sources and element ids of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append(a["href"])
        if tag in ("img", "script") and a.get("src"):
            self.srcs.append(a["src"])
        if tag == "link" and a.get("href"):
            self.hrefs.append(a["href"])


@functools.lru_cache(maxsize=None)
def _parse(page: Path) -> _Refs:
    p = _Refs()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def _internal(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and not url.startswith(("mailto:", "javascript:"))


def _the_site_builds_with_warnings_as_errors(site):
    assert (site / "index.html").is_file()
    names = {p.relative_to(site).as_posix() for p in _pages(site)}
    for page in ("getting-started.html", "guide/batch.html", "guide/add-method.html", "results/tables.html",
                 "results/leaderboard.html", "results/checks.html", "results/performance.html", "science/index.html",
                 "class_supremum.html", "notebooks/index.html", "notebooks/00_quickstart.html", "api/index.html",
                 "changelog.html"):
        assert page in names, f"{page} is not in the site"


def _no_internal_link_or_anchor_is_broken(site):
    broken = []
    for page in _pages(site):
        for href in _parse(page).hrefs:
            if not _internal(href) or href in ("", "#"):
                continue
            parts = urlsplit(href)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href} (no file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _parse(target).ids:
                broken.append(f"{page.relative_to(site)}: {href} (no anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken[:40])


def _every_image_exists_and_is_not_empty(site):
    missing = []
    for page in _pages(site):
        for src in _parse(page).srcs:
            if not _internal(src) or src.startswith("data:"):
                continue
            target = (page.parent / unquote(urlsplit(src).path)).resolve()
            if not target.is_file() or target.stat().st_size == 0:
                missing.append(f"{page.relative_to(site)}: {src}")
    assert not missing, "missing or empty files:\n" + "\n".join(missing)
    tables = [s for s in _parse(site / "results" / "tables.html").srcs if s.endswith(".png")]
    assert len(tables) == len(list((ROOT / "figures").glob("20_tables__*.png"))) >= 1, "the committed figures"
    assert all(p.stat().st_size > 0 for p in (site / "_images").glob("*"))


def _api_documents_the_method_protocol_and_every_public_name(site):
    ids: set[str] = set()
    for page in (site / "api").glob("*.html"):
        ids |= _parse(page).ids
    assert {"dpkit.queries.release.MethodBase", "dpkit.queries.release.Method", "dpkit.queries.release.Release",
            "dpkit.queries.release.MethodBase.release"} <= ids
    modules = {m: importlib.import_module(m) for layer in docs_build.LAYERS for m in docs_build.public_modules(layer)}
    missing, absent = [], object()
    for modname, module in modules.items():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if isinstance(obj, type(module)):
                continue
            # documented once: in a public module that holds the same object under that name
            where = {f"{m}.{name}" for m, mod in modules.items() if getattr(mod, name, absent) is obj}
            if not where & ids:
                missing.append(f"{modname}.{name}")
    assert not missing, "public names without an API entry: " + ", ".join(missing)


def _the_api_pages_follow_the_layers(site):
    text = (site / "api" / "index.html").read_text()
    order = [text.index(f"dpkit.{layer}</span>") for layer in docs_build.LAYERS]
    assert order == sorted(order), "the API index lists the layers bottom to top (ARCHITECTURE.md)"


def _the_leaderboard_page_shows_the_records_board(site):
    text = (site / "results" / "leaderboard.html").read_text()
    assert "<table" in text and "not generated yet" not in text.lower()
    for method in BOARD_METHODS:
        assert method in text
    # the board's headline and, for CSN σ = 4 in Table 3.3, the winner with its interval and verdict
    words = _text(site / "results" / "leaderboard.html")
    assert "better than the thesis in" in words.lower() and "0.017 [0.016, 0.018] (0.026) better" in words
    # the winner sets and the coverage study, from the same records
    assert "one certain winner in 4/4 and 4/4" in words and "Winner sets" in words
    assert "Coverage of the intervals" in words and "median CI miss" in words


def test_a_missing_records_file_says_not_generated_yet(tmp_path):
    docs_build.leaderboard_page(tmp_path, tmp_path / "absent.parquet")
    text = (tmp_path / "results" / "leaderboard.md").read_text()
    assert "Not generated yet: `make leaderboard`" in text and "absent.parquet" in text
    assert "|---" not in text and not re.search(r"\b0\.\d", text), "no table and no error number without the records"


def _results_that_were_not_computed_say_which_command_makes_them(site):
    text = _text(site / "results" / "checks.html")
    if (ROOT / "data" / "checks" / "checks.csv").is_file():  # published (make checks-publish): rendered, not run
        assert "The published checks" in text and "Not generated yet" not in text
    else:
        assert "Not generated yet: make reproduce" in text and "2.4 h" in text and "make smoke" in text


def test_the_checks_page_renders_published_checks_folded_per_notebook(tmp_path):
    """No batch summary given: the published checks.csv, with its provenance line, the counts and one folded table per
    notebook (a notebook run twice tells its runs apart by their parameters); a batch summary, when given, wins."""
    from checks_batch import fake_batch, fake_run

    from dpkit.batch.checks import main as checks_main

    published = tmp_path / "published"
    batch = fake_batch(tmp_path, control_fails=False)
    fake_run(batch, "20_tables", {"DATASETS": ["PAM"]}, [], status="unavailable", error="PAM is not on this machine")
    assert checks_main([str(batch), "--publish", str(published)]) == 1
    docs_build.checks_page(tmp_path / "src", tmp_path / "no-summary.md", published)
    text = (tmp_path / "src" / "results" / "checks.md").read_text()
    assert "Not generated yet" not in text and f"Read from `{published / 'checks.csv'}`" in text
    assert "**6 checks** of 2 notebooks in 3 runs" in text and "**3/3 claims PASS**" in text
    assert "**2/3 negative controls FAIL**" in text and "1 verdict(s) not as expected" in text
    assert "Assembled " in text and "from 3 run(s)" in text  # the provenance line
    assert text.count("<details>") == 2 and "<summary>20_tables: 4 checks in 2 run(s)" in text
    assert "| `SEED=1` | `T1` |" in text and "| `SEED=2` | `T2` |" in text  # its two runs told apart
    # narrowed to fit the page: one "statistic (bound)" and one "verdict / expected" column, no "consistent" column
    tables = text.split("<summary>")[1:]
    assert all("| statistic (bound) |" in t and "| verdict / expected |" in t and "consistent |" not in t for t in tables)
    assert "Not run: data documented as possibly unavailable offline" in text and "PAM is not on this machine" in text
    docs_build.checks_page(tmp_path / "src2", published / "checks.csv", tmp_path / "elsewhere")  # --checks names it
    assert (tmp_path / "src2" / "results" / "checks.md").read_text() == text
    summary = tmp_path / "summary.md"
    summary.write_text("| notebook | id |\n|---|---|\n| from the batch | X1 |\n")
    docs_build.checks_page(tmp_path / "src", summary, published)
    text = (tmp_path / "src" / "results" / "checks.md").read_text()
    assert "from the batch" in text and "The published checks" not in text


def test_no_checks_summary_and_none_published_says_not_generated(tmp_path):
    docs_build.checks_page(tmp_path, tmp_path / "no-summary.md", tmp_path / "no-published")
    text = (tmp_path / "results" / "checks.md").read_text()
    assert "Not generated yet: `make reproduce`" in text and "no-published" in text and "make checks-publish" in text
    assert "|---" not in text


def test_a_bad_published_checks_file_stops_the_build_in_one_line(tmp_path):
    from checks_batch import fake_batch

    from dpkit.batch.checks import main as checks_main

    published = tmp_path / "published"
    assert checks_main([str(fake_batch(tmp_path)), "--publish", str(published)]) == 0
    csv = published / "checks.csv"
    csv.write_text(csv.read_text().replace(",PASS,PASS,True", ",PASS,PASS,False", 1))
    with pytest.raises(docs_build.BuildError, match="column 'consistent'") as caught:
        docs_build.checks_page(tmp_path / "src", tmp_path / "no-summary.md", published)
    assert str(caught.value).startswith(str(csv)) and "\n" not in str(caught.value)


def _the_tables_page_shows_the_published_tables(site):
    """Rendered from data/tables/tables.csv (published, with its provenance), not run: a newcomer's quick build."""
    from dpkit.experiments.tables_records import read_tables

    published = read_tables()
    text = _text(site / "results" / "tables.html")
    assert "Not generated yet" not in text and "Assembled" in text  # the provenance line
    first = published[(published["mechanism"] == "I") & (published["constants"] == "correct")].iloc[0]
    assert f"{first['abs_mean']:.3f} ± {first['abs_std']:.3f} ({first['paper_abs']:.3f})" in text
    assert "<details" in (site / "results" / "tables.html").read_text()  # the long tables folded


def test_missing_tables_say_how_to_make_them(tmp_path):
    docs_build.tables_page(tmp_path, tmp_path / "no-tables")
    text = (tmp_path / "results" / "tables.md").read_text()
    assert "Not generated yet: `make tables`" in text and "no-tables" in text and "--publish" in text


def test_the_published_leaderboard_page_has_its_figure_and_a_summary_first(tmp_path):
    from dpkit.board.records import PUBLISHED

    (tmp_path / "figures").mkdir()
    for png in (ROOT / "figures").glob("45_leaderboard__leaderboard_table_3_*_abs.png"):
        shutil.copy(png, tmp_path / "figures" / png.name)
    docs_build.leaderboard_page(tmp_path, PUBLISHED)
    text = (tmp_path / "results" / "leaderboard.md").read_text()
    head = text.index("better than the thesis in")
    assert head < text.index("## The best method per cell") < text.index("## Every method")
    assert "/figures/45_leaderboard__leaderboard_table_3_2_abs.png" in text
    every = text.split("## Every method")[1].split("## Certified on the whole query class")[0]
    assert every.count("<details>") == 5  # every method's table, one per data set
    assert text.count("<details>") == 8  # and the winner sets, the coverage study and the certified cells, folded


def _the_faq_says_which_method_to_try_first_from_the_records(site):
    text = _text(site / "faq.html")
    assert "generated: which-method" not in (site / "faq.html").read_text()
    for ds in ("WDBC", "CSN"):
        assert f"{ds} (" in text  # a row per data set of the test board, with its dimension
    assert "kme-synthetic" in text and "records.parquet" in text


def _nothing_is_clipped_at_1280_px(site):
    """Every table and code block of every page of the site fits a 1280 px wide window (its folds opened, MathJax
    blocked: a formula in a table shows as its TeX source), in one browser session."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    pages = [p.relative_to(site).as_posix() for p in _pages(site)]
    assert len(pages) > 30 and "science/errata.html" in pages and "class_supremum.html" in pages
    clipped: list[str] = []
    with _served(site) as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url
                      else route.fulfill(status=200, content_type="application/javascript", body=""))
            for page in pages:
                tab.goto(f"{served}/{page}", wait_until="load", timeout=60_000)
                tab.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
                found = tab.evaluate(r"""() => {
                    const out = [];
                    const els = document.querySelectorAll('.bd-article table, .bd-article pre, '
                                                          + '.bd-article .pst-scrollable-table-container');
                    for (const el of els) {
                        if (el.scrollWidth > el.clientWidth + 1)
                            out.push(`${el.tagName.toLowerCase()} ${el.scrollWidth} > ${el.clientWidth}: `
                                     + el.innerText.slice(0, 60).replace(/\s+/g, ' '));
                    }
                    return out;
                }""")
                clipped += [f"{page}: {f}" for f in found]
        finally:
            browser.close()
    assert not clipped, "clipped at 1280 px:\n" + "\n".join(clipped[:20])


def _quick_build_notebook_pages_say_they_were_not_executed(site):
    pages = sorted((site / "notebooks").glob("[0-9]*.html"))
    assert len(pages) == len(list((ROOT / "notebooks").glob("[0-9]*.ipynb")))
    for page in pages:
        assert "Not executed in this build" in _text(page), page.name


def test_executed_notebook_pages_state_quick_mode(tmp_path):
    """A run folder's notebook page says QUICK mode and its parameters (no Sphinx: the staged page)."""
    import nbformat

    run = tmp_path / "runs" / "57_ellipsoid"
    run.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "57_ellipsoid.ipynb", run / "57_ellipsoid.ipynb")
    page = tmp_path / "src"
    docs_build.notebook_pages(page, [docs_build.Run("57_ellipsoid", run, {"QUICK": True, "SEED": 0})])
    nb = nbformat.read(page / "notebooks" / "57_ellipsoid.ipynb", as_version=4)
    assert "QUICK mode" in nb.cells[1].source and "`SEED=0`" in nb.cells[1].source
    assert "no run of it" in (page / "notebooks" / "index.md").read_text()


def _text(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


# --- in a browser ----------------------------------------------------------------------------------------------------

def _require_browser() -> None:
    problems = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("playwright is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        problems.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    if problems:
        reason = "the docs browser test needs: " + "; ".join(problems)
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: not skipped)")
        pytest.skip(reason)


@contextlib.contextmanager
def _served(site: Path):
    """The site over HTTP on 127.0.0.1 (a random free port), as a reader's browser gets it."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _every_page_loads_in_chromium_without_a_console_error(site):
    _require_browser()
    with _served(site) as served:
        _load_every_page(site, served)


def _load_every_page(site: Path, served: str) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    pages = _pages(site)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            tab = browser.new_page()
            current = {"page": ""}
            # the one external resource, MathJax from its CDN (pages with math), is answered with an empty script:
            # this machine is offline and the test checks the site; any other external request is an error
            external: set[str] = set()

            def answer(route):
                host = urlsplit(route.request.url).netloc
                if host in ("127.0.0.1", f"127.0.0.1:{urlsplit(served).port}"):
                    return route.continue_()
                external.add(host)
                if host == "cdn.jsdelivr.net" and "/mathjax" in route.request.url:
                    return route.fulfill(status=200, content_type="application/javascript", body="")
                return route.abort()

            tab.route("**/*", answer)
            tab.on("response", lambda r: errors.append(f"{current['page']}: HTTP {r.status} {r.url}")
                   if r.status >= 400 else None)
            tab.on("console", lambda m: errors.append(f"{current['page']}: {m.text}") if m.type == "error" else None)
            tab.on("pageerror", lambda e: errors.append(f"{current['page']}: {e}"))
            tab.on("requestfailed", lambda r: errors.append(f"{current['page']}: request failed {r.url}"))
            for page in pages:
                current["page"] = page.relative_to(site).as_posix()
                response = tab.goto(f"{served}/{current['page']}", wait_until="load", timeout=60_000)
                assert response is not None and response.ok, current["page"]
        finally:
            browser.close()
    assert not errors, "console errors:\n" + "\n".join(errors[:30])
    assert external <= {"cdn.jsdelivr.net"}, f"pages request other external hosts: {sorted(external)}"
    assert len(pages) > 30


# --- the README --------------------------------------------------------------------------------------------------

def test_the_readme_is_a_front_page_of_at_most_10_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes (at most {README_LIMIT}: move sections into docs/)"


def test_the_readme_links_resolve_and_point_into_the_docs():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [u for u in links if _internal(u)]
    broken = [u for u in local if not (ROOT / unquote(urlsplit(u).path)).is_file()]
    assert not broken, f"README.md links to missing files: {broken}"
    docs_pages = [u for u in local if u.startswith("docs/") and u.endswith(".md")]
    assert len(docs_pages) >= 8, "the README links into the docs pages"


def test_the_readme_board_block_is_the_script_s_output(tmp_path):
    """docs/readme_board.py writes the block from a records file; without one it refuses (exit 2), writing nothing."""
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    records = tmp_path / "records.parquet"
    write_records(_records(), records)
    script = [sys.executable, str(DOCS / "readme_board.py"), "--readme", str(readme)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    missing = subprocess.run(script + ["--records", str(tmp_path / "none.parquet")], env=env, capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "none.parquet" in missing.stderr
    assert readme.read_text() == (ROOT / "README.md").read_text()
    no_prov = subprocess.run(script + ["--records", str(records)], env=env, capture_output=True, text=True)
    assert no_prov.returncode == 2 and "provenance.json" in no_prov.stderr  # a published board has its provenance
    assert readme.read_text() == (ROOT / "README.md").read_text()
    write_provenance({"date": "2026-11-27T18:00:00+00:00", "dpkit_version": "0.9", "git": {"commit": "0123456789abcdef"},
                      "machine": {"cpu_count": 2, "platform": "Linux-x86_64"}, "runs": [{}, {}], "compute_s": 27000.0,
                      "projection": [{"workers": 2, "list_schedule_s": 13560.0}, {"workers": 8, "list_schedule_s": 3420.0},
                                     {"workers": 64, "list_schedule_s": 460.0}]},
                     tmp_path / "provenance.json")
    assert subprocess.run(script + ["--records", str(records)], env=env, capture_output=True).returncode == 0
    text = readme.read_text()
    assert ("Assembled 2026-11-27 by dpkit 0.9 at 0123456789ab from 2 run(s): 7.5 h of compute on 2 CPU(s) "
            "(Linux-x86_64). Runs' commits not recorded. Its repetitions, scheduled longest first on 2/8/64 "
            "workers: 226/57/8 min of wall time (start-up and assembly not included).") in text
    assert "`kme-synthetic` 0.017 [0.016, 0.018] (0.026) better" in text and "better than the thesis in" in text.lower()
    assert subprocess.run(script + ["--records", str(records), "--check"], env=env).returncode == 0
    assert text.split("<!-- board:end -->")[1] == (ROOT / "README.md").read_text().split("<!-- board:end -->")[1]


# --- the built site: one test, its checks as subtests -------------------------------------------------------------

#: every check of the built site, run as subtests of one test: the site is built once, on one xdist worker
SITE_CHECKS = {
    "the site builds with warnings as errors": _the_site_builds_with_warnings_as_errors,
    "no internal link or anchor is broken": _no_internal_link_or_anchor_is_broken,
    "every image exists and is not empty": _every_image_exists_and_is_not_empty,
    "the API documents the method protocol and every public name": _api_documents_the_method_protocol_and_every_public_name,
    "the api pages follow the layers": _the_api_pages_follow_the_layers,
    "the leaderboard page shows the records board": _the_leaderboard_page_shows_the_records_board,
    "results that were not computed say which command makes them": _results_that_were_not_computed_say_which_command_makes_them,
    "the tables page shows the published tables": _the_tables_page_shows_the_published_tables,
    "the faq says which method to try first from the records": _the_faq_says_which_method_to_try_first_from_the_records,
    "nothing is clipped at 1280 px": _nothing_is_clipped_at_1280_px,
    "quick build notebook pages say they were not executed": _quick_build_notebook_pages_say_they_were_not_executed,
    "every page loads in chromium without a console error": _every_page_loads_in_chromium_without_a_console_error,
}


@pytest.mark.browser
def test_the_quick_site(site, subtests):
    """The quick site, built with sphinx -W: each of :data:`SITE_CHECKS` as a subtest."""
    for name, check in SITE_CHECKS.items():
        with subtests.test(msg=name):
            check(site)


def _fake_batch_run(batch: Path, stem: str, params: dict, *, status: str = "ok") -> Path:
    """A run folder as ``python -m dpkit.batch run`` leaves it: ``<batch>/<stem>/<key>/``."""
    from dpkit.batch.manifest import run_key

    key = run_key(f"{stem}.ipynb", params)
    run = batch / stem / key
    run.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / f"{stem}.ipynb", run / f"{stem}.ipynb")
    (run / "metrics.json").write_text("{}")
    (run / "run.json").write_text(json.dumps({"notebook": f"{stem}.ipynb", "parameters": params, "key": key,
                                              "status": status, "error": None if status == "ok" else "a cell failed"}))
    (run / "fig.png").write_bytes((ROOT / "figures" / "20_tables__tables_abs_vs_sigma.png").read_bytes())
    return run


def test_a_batch_folder_renders_each_finished_run_and_refuses_a_failed_one(tmp_path):
    """``make docs BATCH=...``: a page per run (a notebook run twice gets two), its figures; a failed run stops
    the build naming it."""
    from dpkit.batch.execute import unfinished_reason

    batch = tmp_path / "batch"
    runs = [_fake_batch_run(batch, "57_ellipsoid", {"QUICK": False, "SEED": s}) for s in (0, 1)]
    assert all(unfinished_reason(r) is None for r in runs)
    found, problems = docs_build.find_runs(batch, ["57_ellipsoid", "54_smoothness"])
    assert not problems and sorted(r.folder for r in found) == sorted(runs)
    docs_build.notebook_pages(tmp_path / "src", found)
    pages = sorted(p.name for p in (tmp_path / "src" / "notebooks").glob("57_ellipsoid-*.ipynb"))
    assert pages == sorted(f"57_ellipsoid-{r.name[:8]}.ipynb" for r in runs)
    import nbformat

    nb = nbformat.read(tmp_path / "src" / "notebooks" / pages[0], as_version=4)
    assert "full size" in nb.cells[1].source and "fig.png" in nb.cells[-1].source
    assert "`54_smoothness`: no run of it" in (tmp_path / "src" / "notebooks" / "index.md").read_text()
    failed = _fake_batch_run(batch, "54_smoothness", {"QUICK": False, "SEED": 0}, status="failed")
    _, problems = docs_build.find_runs(batch, ["57_ellipsoid", "54_smoothness"])
    assert len(problems) == 1 and str(failed) in problems[0]
    assert docs_build.build(tmp_path / "out", notebooks=batch, board=tmp_path / "none", tables=tmp_path / "none",
                            checks=tmp_path / "none") == 1
    assert not (tmp_path / "out" / "html").exists()
