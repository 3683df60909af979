"""The Jupyter server configuration ``make lab`` adds (``JUPYTER_CONFIG_PATH``; a user's own configuration still
applies): every notebook is saved without outputs, execution counts or widget state (``tools/notebook_clean.py``),
whether saved by hand or by autosave, so the notebooks stay clean in git while the open tab keeps its outputs."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from notebook_clean import pre_save_hook  # noqa: E402

c = get_config()  # noqa: F821 - defined by the Jupyter config loader
c.ContentsManager.pre_save_hook = pre_save_hook
