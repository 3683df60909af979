"""JupyterLab as ``make lab`` starts it, in a real browser: the κ-sweep notebook shows its figure inline, its widget
panel redraws, and a save writes the notebook without outputs.

The server gets ``make lab``'s environment (read from ``make -n lab``: no ``MPLBACKEND`` for the kernels, the pre-save
hook of ``tools/jupyter`` on ``JUPYTER_CONFIG_PATH``), on a scratch copy of the notebook (QUICK, INTERACTIVE) so
nothing is written into the repository. Chromium and Playwright as in ``tests/test_browser.py`` (skipped without
them, failed under ``CI=true``).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_browser import (
    _ALL_EXECUTED,
    _FIND,
    _KERNEL_IDLE,
    _RUN_ALL,
    _SHUTDOWN,
    CHROMIUM,
    CHROMIUM_ARGS,
    TIMEOUT_MS,
    _require,
    jupyterlab_server,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "21_kappa_sweep"


def lab_environment() -> dict[str, str]:
    """The environment ``make lab`` gives JupyterLab: this one with its ``env -u NAME`` / ``NAME=value`` applied."""
    out = subprocess.run(["make", "-s", "-n", "-o", ".venv/.dpkit-installed", "lab", "NO_BROWSER=1"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.replace("\\\n", " ").splitlines()
    words = shlex.split(next(line for line in lines if "jupyter lab" in line))
    assert words[0] == "env" and "jupyter" in " ".join(words), out.stdout
    env = dict(os.environ)
    i = 1
    while i < len(words) and (words[i] == "-u" or "=" in words[i]):
        if words[i] == "-u":
            env.pop(words[i + 1], None)
            i += 2
        else:
            name, value = words[i].split("=", 1)
            env[name] = value
            i += 1
    return env


def test_make_lab_gives_kernels_no_agg_and_installs_the_pre_save_hook():
    env = lab_environment()
    assert "MPLBACKEND" not in env  # the Makefile exports Agg for headless runs; a kernel of make lab must not get it
    paths = env["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert (Path(paths[0]) / "jupyter_server_config.py").is_file(), paths


def test_the_pre_save_hook_cleans_a_notebook_model():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from notebook_clean import pre_save_hook
    finally:
        sys.path.remove(str(ROOT / "tools"))
    nb = json.loads((ROOT / "notebooks" / f"{NOTEBOOK}.ipynb").read_text())
    committed = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]
            cell["execution_count"] = 3
            cell["metadata"]["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    pre_save_hook(model={"type": "notebook", "content": nb}, path=f"{NOTEBOOK}.ipynb", contents_manager=None)
    assert nb == committed


@pytest.fixture(scope="module")
def make_lab(tmp_path_factory):
    """A JupyterLab server with ``make lab``'s environment on a scratch copy of the κ-sweep notebook."""
    _require()
    import nbformat

    tmp = tmp_path_factory.mktemp("makelab")
    nbdir = tmp / "notebooks"
    nbdir.mkdir()
    nb = nbformat.read(ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])][0]
    for flag in ("QUICK", "INTERACTIVE"):
        params.source, n = re.subn(rf"^{flag}: bool = \w+", f"{flag}: bool = True", params.source, flags=re.M)
        assert n == 1, flag
    nbformat.write(nb, nbdir / f"{NOTEBOOK}.ipynb")
    with jupyterlab_server(tmp, nbdir, lab_environment()) as (base, token):
        yield base, token, nbdir


# the figure cell (the one that shows the sweep's figure) of the notebook's panel: its output images and texts
_FIGURE_CELL = f"""(path) => {{
  const w = ({_FIND})(path);
  const cell = w.content.widgets.find(c => c.model.type === 'code'
                                      && c.model.sharedModel.getSource().includes('show_figure(run.figure)'));
  if (!cell) return null;
  const imgs = [...cell.node.querySelectorAll('.jp-OutputArea-output img')].map(i => i.getAttribute('src') || '');
  const texts = [...cell.node.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText);
  return {{imgs, texts}};
}}"""
# matplotlib's backend in the notebook's kernel (inline: every figure a cell draws is shown under it)
_BACKEND = f"""async (path) => {{
  const k = ({_FIND})(path).sessionContext.session.kernel;
  const future = k.requestExecute({{code: 'import matplotlib; print(matplotlib.get_backend())', silent: false}});
  let text = '';
  future.onIOPub = (msg) => {{ if (msg.header.msg_type === 'stream') text += msg.content.text; }};
  await future.done;
  return text.trim();
}}"""
_SAVE = f"""(path) => {{
  const w = ({_FIND})(path);
  window.jupyterapp.shell.activateById(w.id);
  return window.jupyterapp.commands.execute('docmanager:save');
}}"""


def test_kappa_sweep_in_make_lab(make_lab, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token, nbdir = make_lab
    path = f"{NOTEBOOK}.ipynb"
    file = nbdir / path
    before = file.read_text()
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        try:
            page.goto(f"{base}/lab/workspaces/test-makelab/tree/{path}?reset&token={token}")
            page.wait_for_function(_KERNEL_IDLE, arg=path, timeout=TIMEOUT_MS, polling=250)
            page.evaluate(_RUN_ALL, path)
            page.wait_for_function(_ALL_EXECUTED, arg=path, timeout=TIMEOUT_MS, polling=500)
            page.wait_for_function(_KERNEL_IDLE, arg=path, timeout=TIMEOUT_MS, polling=250)
            # the notebook's own figure, inline, once (not "<Figure size ...>", not twice)
            fig = page.evaluate(_FIGURE_CELL, path)
            assert fig is not None, "no figure cell found"
            assert len(fig["imgs"]) == 1 and fig["imgs"][0].startswith("data:image/png"), fig
            assert not any("<Figure size" in t for t in fig["texts"]), fig["texts"]
            backend = page.evaluate(_BACKEND, path)
            assert "inline" in backend, f"the kernel draws with {backend!r}, not inline (MPLBACKEND reached it?)"
            # the widget panel: σ 4 -> 6, Run: its figure is drawn again
            page.locator(".dpkit-status").last.wait_for(timeout=TIMEOUT_MS)
            out = page.locator(".widget-vbox .widget-output").last
            img0 = out.locator("img").first.get_attribute("src") or ""
            assert img0.startswith("data:image/png"), "the panel shows no figure after run all"
            page.locator(".widget-dropdown", has_text="sigma").locator("select").select_option(label="6.0")
            page.locator("button.widget-button[title='Run']").last.click()
            page.wait_for_function("""(before) => {
                const outs = document.querySelectorAll('.widget-vbox .widget-output');
                const img = outs.length ? outs[outs.length - 1].querySelector('img') : null;
                return !!img && img.getAttribute('src') !== before;
            }""", arg=img0, timeout=TIMEOUT_MS, polling=250)
            # save: the file on disk has no outputs, the tab keeps them
            page.evaluate(_SAVE, path)
            deadline = time.monotonic() + 60
            while file.read_text() == before and time.monotonic() < deadline:
                time.sleep(0.5)
            assert file.read_text() != before, "the notebook was not saved"
            saved = json.loads(file.read_text())
            code = [c for c in saved["cells"] if c["cell_type"] == "code"]
            assert not any(c["outputs"] for c in code), "saved with outputs"
            assert not any(c["execution_count"] for c in code), "saved with execution counts"
            assert "widgets" not in saved["metadata"], "saved with widget state"
            assert [c["source"] for c in saved["cells"]] == [c["source"] for c in json.loads(before)["cells"]]
            assert len(page.evaluate(_FIGURE_CELL, path)["imgs"]) == 1, "the tab lost its figure on saving"
            assert not errors, errors
        except Exception:
            page.screenshot(path=tmp_path / "page.png", full_page=True)
            print(f"browser state saved in {tmp_path}; errors: {errors}")
            raise
        finally:
            try:
                page.evaluate(_SHUTDOWN, path)
            finally:
                browser.close()
