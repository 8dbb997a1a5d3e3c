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


def test_readme_indole_example_finds_indoles_not_carbazoles():
    """Issue 40, defect 16: the README's "indoles" example was the SMILES `c1ccc2[nH]ccc2c1`,
    which as a query ignores H counts and ring memberships: its first five hits held two
    N-substituted carbazoles. The example's query, checked with RDKit on the bundled data, finds
    only N-H indoles, no carbazole, and as many as the README says."""
    from conftest import BUNDLED_SMI
    from rdkit import Chem, RDLogger

    line = next(ln for ln in README.read_text().splitlines() if "# N-H indoles" in ln)
    assert "--smarts" in line
    query = Chem.MolFromSmarts(re.search(r"-q '([^']+)'", line).group(1))
    indole = Chem.MolFromSmarts("c1ccc2[nH]ccc2c1")
    carbazole = Chem.MolFromSmarts("c1ccc2c(c1)nc1ccccc12")
    RDLogger.DisableLog("rdApp.*")
    mols = [Chem.MolFromSmiles(ln.split()[0]) for ln in BUNDLED_SMI.read_text().splitlines()]
    hits = [m for m in mols if m is not None and m.HasSubstructMatch(query)]
    assert hits and all(m.HasSubstructMatch(indole) for m in hits)
    assert not any(m.HasSubstructMatch(carbazole) for m in hits)
    assert f"finds {len(hits)} N-H indoles and no carbazole" in README.read_text()


def test_readme_quotes_the_latest_analog_figure_of_benchmarks():
    """Issue 40, defect 16: the README quoted 11.5 ms for analog top-100 within 3 edits, an older
    run than BENCHMARKS.md's latest (the first table of its analog section)."""
    bench = (ROOT / "BENCHMARKS.md").read_text()
    section = bench[bench.index("## Analog search by graph edit distance") :]
    header = next(ln for ln in section.splitlines() if ln.startswith("| D |"))
    column = [c.strip() for c in header.strip("|").split("|")].index("top-100 p50 ms")
    row = next(ln for ln in section.splitlines() if ln.startswith("| 3 |"))
    latest = row.strip("|").split("|")[column].strip().strip("*")
    readme = " ".join(README.read_text().split())  # as a reader sees it, whatever the wrapping
    assert f"top-100 within 3 edits: {latest} ms at the median" in readme, latest


def test_demo_writes_its_store_under_the_checkout():
    """Issue 40, defect 13: scripts/demo.sh always wrote /tmp/molsift-demo.store, one path for
    every checkout and user, so two demos broke each other. It writes under the checkout, in
    the folder git ignores."""
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "/tmp/" not in demo and "OUT=${1:-tmp/demo.store}" in demo
    assert "/tmp" in (ROOT / ".gitignore").read_text().splitlines()
