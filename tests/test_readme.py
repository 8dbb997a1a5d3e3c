"""README.md as a newcomer uses it (issue 14, defect 8): every ```python block runs as a script
from a fresh directory, and every `molsift` line of the ```bash blocks that needs only the bundled
data runs too, in order, with the venv's bin on PATH as the README says."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUNDLED_SMI, ROOT

README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
# File names of the bash examples: an argument that looks like one is an input, unless it
# follows an output option; a line runs only when its inputs exist (bundled or made above).
PATHLIKE = re.compile(
    r"^[\w./-]+\.(smi|csv|tsv|sdf|gz|zst|store|run|json|darshan|parquet|png)(/[\w.]+)?$"
)
OUTPUT_OPTIONS = {"-o", "--output", "--io-log"}


def blocks(lang: str) -> list:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


def fresh_dir(tmp_path: Path) -> Path:
    """A directory holding only data/nci_first_5k.smi, like a new clone's bundled data."""
    (tmp_path / "data").mkdir()
    shutil.copy(BUNDLED_SMI, tmp_path / "data" / BUNDLED_SMI.name)
    return tmp_path


def env_with_venv() -> dict:
    return dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_readme_python_block_runs_as_a_script(tmp_path, index):
    cwd = fresh_dir(tmp_path)
    script = cwd / f"readme_{index}.py"
    script.write_text(blocks("python")[index])
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr


def runnable(words: list, cwd: Path) -> bool:
    """A molsift line whose input files all exist in `cwd` (profile runs other programs)."""
    if words[:1] != ["molsift"] or "profile" in words:
        return False
    inputs = [
        w
        for prev, w in zip(["", *words], words)
        if prev not in OUTPUT_OPTIONS and PATHLIKE.match(w)
    ]
    return all((cwd / w).exists() for w in inputs)


def test_readme_bash_lines_run_on_the_bundled_data(tmp_path):
    cwd = fresh_dir(tmp_path)
    ran = []
    for block in blocks("bash"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if not runnable(words, cwd):
                continue
            proc = subprocess.run(
                words, cwd=cwd, env=env_with_venv(), capture_output=True, text=True, timeout=600
            )
            assert proc.returncode == 0, f"{line}\n{proc.stderr}"
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
