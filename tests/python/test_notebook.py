"""docs/notebooks/quickstart.ipynb runs top to bottom and produces its figures."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import ROOT

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (make test installs it)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (make test installs it)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (make test installs it)")


def test_quickstart_notebook_runs_and_draws(tmp_path, monkeypatch):
    # The kernel's temporary files go to a directory of the test's own, removed after it: the
    # notebook's sweep starts a process pool, whose forkserver socket directory (pymp-*) a
    # kernel shut down from outside does not remove. It is a short path under the system's
    # temporary directory, not under tmp_path: the socket's path must fit AF_UNIX's 108 bytes,
    # which a deep tmp_path (/tmp/pytest-of-root/pytest-100/popen-gw1/test_…/) does not leave.
    tmp = Path(tempfile.mkdtemp(prefix="lh-nb-"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    nb = nbformat.read(ROOT / "docs" / "notebooks" / "quickstart.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the notebook should show the cwnd figure and the box plot inline"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert (tmp_path / "notebook-sweep" / "summary.parquet").exists()
