"""The widget panels in a real browser: JupyterLab driven by Playwright in Debian's chromium.

For notebooks 00, 21 and 22 in QUICK mode: open the notebook, run all cells, change one control,
press *Run*, and check that the figure and the table change, that no output holds a traceback and
that the browser logged no console error. The server runs on a scratch copy of the notebooks (so
autosave never writes outputs into the repository), on 127.0.0.1 with a random free port and a token.

Needs ``pip install playwright`` (no browser download) and ``apt-get install chromium``; without
them the tests skip with the reason, except under ``CI=true`` where they fail.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
NOTEBOOKS = ["00_quickstart", "21_kappa_sweep", "22_k_sweep"]
TIMEOUT_MS = 150_000  # one notebook's "run all" in QUICK mode on a busy 2-core machine


def _require() -> None:
    """Skip (or, under CI=true, fail) when Playwright or chromium is missing."""
    problems = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("playwright is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        problems.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    if shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None:
        problems.append("jupyterlab is not installed next to this Python")
    if problems:
        reason = "browser tests need: " + "; ".join(problems)
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: not skipped)")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scratch_notebooks(folder: Path) -> None:
    """Copies of the notebooks with QUICK = True and INTERACTIVE = True in their parameters cell."""
    import nbformat

    nbdir = folder / "notebooks"
    nbdir.mkdir()
    for name in NOTEBOOKS:
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(cells) == 1, f"{name}: one cell tagged 'parameters' expected"
        lines = cells[0].source.splitlines()
        for flag in ("QUICK", "INTERACTIVE"):
            idx = [i for i, line in enumerate(lines) if line.startswith(f"{flag}: bool =")]
            assert len(idx) == 1, f"{name}: {flag}: bool not found in the parameters cell"
            lines[idx[0]] = f"{flag}: bool = True"
        cells[0].source = "\n".join(lines)
        nbformat.write(nb, nbdir / f"{name}.ipynb")


@contextlib.contextmanager
def jupyterlab_server(tmp: Path, root_dir: Path, base_env: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on ``root_dir`` with ``base_env`` and its own scratch configuration, runtime, workspaces
    and settings below ``tmp`` (dpkit's results and figures too: never into the repository): ``(base URL, token)``,
    once it answers; stopped on exit."""
    (tmp / "config" / "labconfig").mkdir(parents=True)
    (tmp / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))  # no news pop-up or fetch
    port, token = _free_port(), secrets.token_hex(16)
    env = {**base_env, "PYTHONPATH": str(ROOT), "DPKIT_RESULTS_DIR": str(tmp / "results"),
           "DPKIT_FIGURES_DIR": str(tmp / "figures"), "JUPYTER_CONFIG_DIR": str(tmp / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "IPYTHONDIR": str(tmp / "ipython")}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
           "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           f"--LabApp.user_settings_dir={tmp / 'settings'}"]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(cmd, cwd=root_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start: {(tmp / 'server.log').read_text()[-3000:]}") from None
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a scratch copy of the notebooks: ``(base URL, token, scratch folder)``."""
    _require()
    tmp = tmp_path_factory.mktemp("lab")
    _scratch_notebooks(tmp)
    with jupyterlab_server(tmp, tmp / "notebooks", os.environ) as (base, token):
        yield base, token, tmp


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# the notebook's panel in JupyterLab, found by its path (not whatever tab is current)
_FIND = """(path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  for (const w of app.shell.widgets('main')) { if (w.context && w.context.path === path) return w; }
  return null;
}"""
_KERNEL_IDLE = f"""(path) => {{
  const w = ({_FIND})(path);
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && w.content.widgets.length > 0;
}}"""
_RUN_ALL = f"""(path) => {{
  const w = ({_FIND})(path);
  window.jupyterapp.shell.activateById(w.id);
  return window.jupyterapp.commands.execute('notebook:run-all-cells');
}}"""
_ALL_EXECUTED = f"""(path) => {{
  const code = ({_FIND})(path).content.widgets.filter(c => c.model.type === 'code');
  return code.length > 0 && code.every(c => c.model.executionCount !== null);
}}"""
_SHUTDOWN = f"""(path) => {{ const w = ({_FIND})(path); return w ? w.sessionContext.shutdown() : null; }}"""


def _panel_state(page) -> tuple[str, str, str]:
    """The panel's figure (PNG data URL), its table's text and its status line."""
    out = page.locator(".widget-vbox .widget-output").last
    img = out.locator("img").first.get_attribute("src") or ""
    table = out.locator("table").first.inner_text()
    status = page.locator(".dpkit-status").last.inner_text() if page.locator(".dpkit-status").count() else ""
    return img, table, status


#: the sweep notebooks and a grid to type into their panel (QUICK data: CSN and CRM subsamples)
SWEEPS = {"21_kappa_sweep": "2, 5", "22_k_sweep": "1, 3"}


def _wait_new_figure(page, before: str) -> None:
    page.wait_for_function("""(before) => {
        const outs = document.querySelectorAll('.widget-vbox .widget-output');
        const img = outs.length ? outs[outs.length - 1].querySelector('img') : null;
        return !!img && img.getAttribute('src') !== before;
    }""", arg=before, timeout=TIMEOUT_MS, polling=250)


def _panel_idle(page) -> None:
    """Wait until the panel's last run has finished in the browser too (Run enabled, Stop disabled)."""
    page.wait_for_function("""() => {
        const last = (t) => [...document.querySelectorAll(`button.widget-button[title='${t}']`)].pop();
        const run = last('Run'), stop = last('Stop');
        return !!run && !!stop && !run.disabled && stop.disabled;
    }""", timeout=TIMEOUT_MS, polling=250)


def _type(page, field, text: str) -> None:
    """Type into a Text control and commit it (Enter, then leave the field), as a user does."""
    field.fill(text)
    field.press("Enter")
    field.blur()
    page.wait_for_timeout(500)  # the committed value reaches the kernel before Run is pressed


def _type_run_export_save(page, notebook: str, grid: str, img_before: str, scratch: Path) -> None:
    """Without leaving the panel: type a sweep grid, Run, Export figure, Copy as papermill call, Save as manifest."""
    import yaml

    field = page.locator(".widget-text", has_text="values_text").locator("input")
    _panel_idle(page)
    _type(page, field, "1, x")  # a bad entry is reported in the panel, nothing is raised
    page.locator("button.widget-button[title='Run']").last.click()
    page.get_by_text("is not a valid").last.wait_for(timeout=TIMEOUT_MS)
    _panel_idle(page)
    _type(page, field, grid)
    page.locator("button.widget-button[title='Run']").last.click()
    _wait_new_figure(page, img_before)
    page.locator(".dpkit-status").last.wait_for(timeout=TIMEOUT_MS)
    out = page.locator(".widget-vbox .widget-output").last
    values = [float(v) for v in grid.split(",")]
    assert out.locator("table tbody tr").count() == len(values), out.locator("table").first.inner_text()
    info = page.locator(".widget-html", has_text="figure exported")
    page.locator("button.widget-button[title='Export figure']").last.click()
    info.last.wait_for(timeout=60_000)
    pdfs = sorted((scratch / "figures").glob(f"{notebook}__*.pdf"))
    assert len(pdfs) == 1, pdfs
    caption = pdfs[0].with_suffix(".caption.txt").read_text()
    assert "σ = 6" in caption and "SIGMA=6.0" in caption and "VALUES=[" in caption, caption
    page.locator("button.widget-button[title='Copy as papermill call']").last.click()
    page.get_by_text("the papermill call of the current setting").last.wait_for(timeout=60_000)
    command = page.locator(".widget-textarea textarea").last.input_value()
    assert "-m dpkit.batch notebook" in command and f"{notebook}.ipynb" in command and "-p SIGMA 6.0" in command, command
    page.locator("button.widget-button[title='Save as manifest']").last.click()
    page.get_by_text("manifest saved").last.wait_for(timeout=60_000)
    manifests = sorted((scratch / "results" / "manifests").glob(f"{notebook}-*.yaml"))
    assert len(manifests) == 1, manifests
    run = yaml.safe_load(manifests[0].read_text())["runs"][0]["parameters"]
    assert run["VALUES"] == values and run["SIGMA"] == 6.0


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_panel_in_jupyterlab(lab, browser, notebook, tmp_path):
    base, token, scratch = lab
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    try:
        path = f"{notebook}.ipynb"
        # a workspace of its own, reset: only this notebook is open
        page.goto(f"{base}/lab/workspaces/test-{notebook}/tree/{path}?reset&token={token}")
        page.wait_for_function(_KERNEL_IDLE, arg=path, timeout=TIMEOUT_MS, polling=250)
        page.evaluate(_RUN_ALL, path)
        page.wait_for_function(_ALL_EXECUTED, arg=path, timeout=TIMEOUT_MS, polling=500)
        page.wait_for_function(_KERNEL_IDLE, arg=path, timeout=TIMEOUT_MS, polling=250)
        panel_status = page.locator(".dpkit-status")
        panel_status.last.wait_for(timeout=TIMEOUT_MS)
        img0, table0, _ = _panel_state(page)
        assert img0.startswith("data:image/png"), "the panel shows no figure after run all"
        assert table0.strip(), "the panel shows no table after run all"
        # change one control (σ: 4 → 6) and press Run
        page.locator(".widget-dropdown", has_text="sigma").locator("select").select_option(label="6.0")
        page.locator("button.widget-button[title='Run']").last.click()
        page.wait_for_function("""(before) => {
            const outs = document.querySelectorAll('.widget-vbox .widget-output');
            const img = outs.length ? outs[outs.length - 1].querySelector('img') : null;
            const st = document.querySelectorAll('.dpkit-status');
            return !!img && img.getAttribute('src') !== before && st.length > 0;
        }""", arg=img0, timeout=TIMEOUT_MS, polling=250)
        img1, table1, status1 = _panel_state(page)
        assert img1 != img0, "the figure did not change"
        assert table1 != table0, "the table did not change"
        assert status1.startswith("done in"), status1
        if notebook in SWEEPS:  # type a new grid, run it, export the figure and save the setting as a manifest
            _type_run_export_save(page, notebook, SWEEPS[notebook], img1, scratch)
        outputs = "\n".join(page.locator(".jp-OutputArea").all_inner_texts())
        assert "Traceback" not in outputs, outputs[max(0, outputs.find("Traceback") - 500):][:3000]
        assert "Error" not in " ".join(page.locator(".jp-OutputArea .widget-html").all_inner_texts())
        assert not errors, "\n".join(errors)
    except Exception:  # keep what the browser showed next to the failure
        page.screenshot(path=tmp_path / "page.png", full_page=True)
        (tmp_path / "outputs.html").write_text("\n".join(page.locator(".jp-OutputArea").evaluate_all(
            "els => els.map(e => e.outerHTML)")))
        print(f"browser state saved in {tmp_path}; console: {errors}")
        raise
    finally:
        try:
            page.evaluate(_SHUTDOWN, f"{notebook}.ipynb")  # free the kernel for the next notebook
        finally:
            page.close()
