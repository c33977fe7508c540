"""docs/notebooks/quickstart.ipynb runs top to bottom and produces its figures."""
from __future__ import annotations

import pytest

from helpers import ROOT

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (make test installs it)")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (make test installs it)")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (make test installs it)")


def test_quickstart_notebook_runs_and_draws(tmp_path, monkeypatch):
    # The kernel's temporary files go under tmp_path: the notebook's sweep starts a process
    # pool, whose forkserver socket directory (/tmp/pymp-*) a kernel shut down from outside
    # does not remove.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    nb = nbformat.read(ROOT / "docs" / "notebooks" / "quickstart.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the notebook should show the cwnd figure and the box plot inline"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert (tmp_path / "notebook-sweep" / "summary.parquet").exists()
