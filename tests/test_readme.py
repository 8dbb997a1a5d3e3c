"""README.md as a newcomer uses it (issue 14, defect 8): every ```python block runs as a script
from a fresh directory, and every `molsift` line of the ```bash blocks that needs only the bundled
data runs too, in order, with the venv's bin on PATH as the README says."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT, fresh_dir, run_documented_line

README = ROOT / "README.md"


def blocks(lang: str) -> list:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_readme_python_block_runs_as_a_script(tmp_path, index):
    cwd = fresh_dir(tmp_path)
    script = cwd / f"readme_{index}.py"
    script.write_text(blocks("python")[index])
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr


def test_readme_bash_lines_run_on_the_bundled_data(tmp_path):
    cwd = fresh_dir(tmp_path)
    ran = []
    for block in blocks("bash"):
        for line in block.splitlines():
            words = run_documented_line(line, cwd)
            if words:
                ran.append(" ".join(words[:2]))
    for verb in ("count", "ingest", "info", "search", "screen", "report"):
        assert f"molsift {verb}" in ran, (verb, ran)


def test_script_without_main_guard_stops_with_one_sentence(tmp_path):
    """The README's snippet without its `if __name__ == "__main__":` stopped with
    multiprocessing's bootstrapping traceback (in every worker); now with one sentence."""
    cwd = fresh_dir(tmp_path)
    script = cwd / "unguarded.py"
    script.write_text('import molsift\nmolsift.ingest("data/nci_first_5k.smi", "nci.store")\n')
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and 'if __name__ == "__main__":' in proc.stderr
    assert "unguarded.py, line 2" in proc.stderr
    assert "Traceback" not in proc.stderr and "bootstrapping" not in proc.stderr
    assert sorted(p.name for p in cwd.iterdir()) == ["data", "unguarded.py"]  # nothing started


def test_readme_says_how_to_get_molsift_on_path_and_mpirun_flags():
    text = README.read_text()
    assert "source .venv/bin/activate" in text and "--oversubscribe" in text
    assert "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in text
