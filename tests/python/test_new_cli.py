"""`lasthop new` (templates that validate and run) and `lasthop completion` (a script bash runs)."""
from __future__ import annotations

import shutil
import subprocess
import tomllib

import pytest

import lasthop
from helpers import run_cli
from lasthop.new_cli import TEMPLATES, _templates


def test_templates_cover_the_cell_bulk_rrul_and_the_five_mechanisms():
    assert {"cell", "tcp-bulk", "rrul", "wqm", "aggctl", "bquic", "cwnd-history", "vwire"} <= set(TEMPLATES)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_validates_and_runs(name, tmp_path):
    r = run_cli("new", name, "-o", str(tmp_path / f"{name}.toml"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / f"{name}.toml").read_text()
    assert text == _templates()[name].read_text() and text.lstrip().startswith("#")
    assert run_cli("validate", str(tmp_path / f"{name}.toml")).returncode == 0
    doc = tomllib.loads(text)
    doc["sim"]["duration"] = "1500ms"  # short: the template's own length is for users
    doc["sim"]["warmup"] = "500ms"
    run = lasthop.run(doc, seed=1)
    assert run.flows["goodput_bps"].sum() > 0, name


def test_new_refuses_to_overwrite_and_unknown_names(tmp_path):
    out = tmp_path / "s.toml"
    assert run_cli("new", "cell", "-o", str(out)).returncode == 0
    r = run_cli("new", "cell", "-o", str(out))
    assert r.returncode == 2 and "exists" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert run_cli("new", "cell", "-o", str(out), "--force").returncode == 0
    r = run_cli("new", "nope", "-o", str(tmp_path / "x.toml"))
    assert r.returncode == 2 and "unknown template" in r.stderr and not (tmp_path / "x.toml").exists()
    listing = run_cli("new", "--list").stdout
    assert all(t in listing for t in TEMPLATES)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_suites_and_choices(tmp_path):
    script = run_cli("completion", "bash")
    assert script.returncode == 0, script.stderr
    (tmp_path / "c.sh").write_text(script.stdout)

    def complete(*words: str) -> set[str]:
        arr = " ".join(f"'{w}'" for w in ("lasthop",) + words)
        code = (f"cd {tmp_path} && source c.sh && COMP_WORDS=({arr}) && COMP_CWORD={len(words)}; _lasthop; "
                "printf '%s\\n' \"${COMPREPLY[@]}\"")
        r = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return set(r.stdout.split())

    assert {"report", "reproduce"} <= complete("rep")
    assert "wqm" in complete("wqm")  # a live tool is a command too
    assert "wqm" in complete("reproduce", "wq")
    assert "--quick" in complete("reproduce", "--qu")
    assert {"wqm", "vwire"} <= complete("bench", "--live", "")
    assert "rrul" in complete("new", "rr")
    zsh = run_cli("completion", "zsh").stdout
    assert "bashcompinit" in zsh and "_lasthop" in zsh
