"""What ships (issue 15 parts 5 and 8): the type stub `molsift/_core.pyi` says exactly what the
compiled module holds, and a wheel installed by pip alone into a fresh virtual environment, with
no network and no source tree, runs every verb of the `molsift` command, `profile` included (its
tracer comes inside the extension module)."""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import BUNDLED_SMI, ROOT

from molsift import _core

STUB = ROOT / "python" / "molsift" / "_core.pyi"
# Protocol methods a class may define besides its public names.
DUNDERS = {"__len__", "__enter__", "__exit__", "__iter__", "__next__", "__getitem__"}


# ---- the stub and the module ----


def _params(fn: ast.FunctionDef, method: bool) -> list[tuple[str, bool]]:
    """(name, has a default) of the parameters a stub function declares, `self` left out."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    out = [(a.arg, d) for a, d in zip(positional, defaults)]
    out += [(a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    static = any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
    return out[1:] if method and not static else out


def _runtime_params(obj) -> list[tuple[str, bool]]:
    """(name, has a default) of a compiled function's parameters (its text signature)."""
    sig = inspect.signature(obj)
    return [
        (p.name, p.default is not inspect.Parameter.empty)
        for p in sig.parameters.values()
        if p.name not in ("self", "$self")
    ]


def _stub() -> dict[str, tuple]:
    """name -> ("function", params) | ("constant",) | ("class", bases, {member: kind/params})."""
    tree = ast.parse(STUB.read_text(), str(STUB))
    out: dict[str, tuple] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = ("function", _params(node, method=False))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ("constant",)
        elif isinstance(node, ast.ClassDef):
            members: dict[str, object] = {}
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                decorators = [ast.unparse(d) for d in item.decorator_list]
                if any(d.endswith(".setter") for d in decorators):
                    continue  # the property's setter: the property is listed once
                if "property" in decorators:
                    members[item.name] = "property"
                else:
                    members[item.name] = _params(item, method=True)
            out[node.name] = ("class", [ast.unparse(b) for b in node.bases], members)
    return {k: v for k, v in out.items() if not k.startswith("_") or k == "__version__"}


def _runtime() -> dict[str, tuple]:
    """The same description of the compiled module."""
    out: dict[str, tuple] = {}
    for name in dir(_core):
        if name.startswith("_") and name != "__version__":
            continue
        obj = getattr(_core, name)
        if inspect.isclass(obj):
            members: dict[str, object] = {}
            if not issubclass(obj, BaseException):
                members["__init__"] = _runtime_params(obj)
                for attr, value in vars(obj).items():
                    if attr.startswith("_") and attr not in DUNDERS:
                        continue
                    if inspect.isgetsetdescriptor(value):
                        members[attr] = "property"
                    else:
                        members[attr] = _runtime_params(getattr(obj, attr))
            bases = [b.__name__ for b in obj.__bases__ if b is not object]
            out[name] = ("class", bases, members)
        elif callable(obj):
            out[name] = ("function", _runtime_params(obj))
        else:
            out[name] = ("constant",)
    return out


def test_the_stub_names_every_class_function_and_constant_of_the_compiled_module():
    stub, runtime = _stub(), _runtime()
    assert sorted(stub) == sorted(runtime), "names differ between _core.pyi and molsift._core"
    for name, described in runtime.items():
        if described[0] == "class":
            kind, bases, members = stub[name]
            assert kind == "class" and bases == described[1], name
            assert members == described[2], f"{name}: methods/properties differ"
        else:
            assert stub[name] == described, f"{name}: kind or parameters differ"


def test_the_stub_is_typed_and_documented():
    """Every parameter and return is annotated; every module-level name and public method has
    a docstring (constants: the string under them)."""
    tree = ast.parse(STUB.read_text())
    body = tree.body
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and node.target.id != "__version__":
            doc = body[i + 1] if i + 1 < len(body) else None
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), (
                f"constant {node.target.id} has no docstring"
            )
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        public = not node.name.startswith("_") or node.name == "__init__"
        setter = any(ast.unparse(d).endswith(".setter") for d in node.decorator_list)
        if public and not setter:
            assert ast.get_docstring(node), f"{node.name} has no docstring"
        if isinstance(node, ast.FunctionDef):
            assert node.returns is not None, f"{node.name}: no return type"
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for a in args:
                assert a.arg in ("self",) or a.annotation is not None, f"{node.name}.{a.arg}"


# ---- a wheel, installed by pip alone ----


def _run(args: list, cwd: Path, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _requirements(requires: list[str] | None) -> list[str]:
    """Distribution names of requirements that apply without extras, here."""
    from packaging.requirements import Requirement

    out = []
    for text in requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req.name)
    return out


def _declared_site(wheel: Path, folder: Path) -> Path:
    """A folder of links to exactly the installed files of the distributions the wheel
    requires, and of those they require in turn (this environment's copies)."""
    import zipfile
    from email.parser import Parser
    from importlib import metadata

    with zipfile.ZipFile(wheel) as z:
        [name] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        wanted = _requirements(Parser().parsestr(z.read(name).decode()).get_all("Requires-Dist"))
    seen: set[str] = set()
    folder.mkdir()
    while wanted:
        dist = metadata.distribution(wanted.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        wanted += _requirements(dist.requires)
        for top in {Path(f).parts[0] for f in dist.files or []} - {"..", "__pycache__"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not (folder / top).exists():
                (folder / top).symlink_to(source)
    return folder


@pytest.mark.slow
def test_a_wheel_installed_by_pip_alone_runs_every_verb(tmp_path):
    maturin = Path(sys.executable).parent / "maturin"
    if not maturin.exists() or shutil.which("cargo") is None:
        pytest.skip("maturin or cargo not installed (scripts/setup.sh installs them)")
    start = time.monotonic()
    # the wheel, built as `pip wheel .` would, reusing the cargo target dir of the checkout
    wheels = tmp_path / "wheels"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    build = [str(maturin), "build", "--release", "--offline", "-q", "-o", str(wheels)]
    _run([*build, "-i", sys.executable], cwd=ROOT, env=clean, timeout=600)
    [wheel] = wheels.glob("molsift-*.whl")

    # a fresh environment: pip from ensurepip, no index, no dependencies; the distributions the
    # wheel declares (and theirs) come from this environment through a .pth file to a folder
    # holding only them (so a dependency the wheel forgets to declare is missing, as for a user),
    # and nothing of the source tree is on the path
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=clean)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)]
    _run(pip, cwd=tmp_path, env=clean)
    fresh_site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=tmp_path,
        env=clean,
    ).stdout.strip()
    declared = _declared_site(wheel, tmp_path / "declared")
    (Path(fresh_site) / "molsift_test_deps.pth").write_text(f"{declared}\n")

    work = tmp_path / "work"
    work.mkdir()
    lines = BUNDLED_SMI.read_text().splitlines(keepends=True)[:300]
    (work / "lib.smi").write_text("".join(lines))
    env = dict(clean, PATH=f"{venv / 'bin'}:{clean.get('PATH', '')}")
    where = _run([str(python), "-c", "import molsift; print(molsift.__file__)"], work, env)
    assert where.stdout.strip().startswith(fresh_site), where.stdout
    installed = Path(fresh_site) / "molsift"
    assert (installed / "_core.pyi").is_file() and (installed / "py.typed").is_file()
    molsift = str(venv / "bin" / "molsift")

    def verb(*args: str) -> str:
        return _run([molsift, *args], work, env).stdout

    assert verb("count", "lib.smi").startswith("300\t")
    ingest = verb("ingest", "lib.smi", "-o", "lib.store", "-j", "2")
    assert "molecules stored 300 + rejected 0" in ingest
    info = verb("info", "lib.store")
    assert "molecules   300" in info and "verified" in info
    hits = verb("search", "lib.store", "-q", "CC(=O)Nc1ccc(O)cc1", "-k", "3").splitlines()
    assert hits[0].startswith("query_id\ttarget_id\tscore") and len(hits) == 4
    # the substructure index, again (ingest wrote it): worker processes of the installed wheel
    assert "substructure index written" in verb("index", "lib.store", "--pattern", "-j", "2")
    screen = verb("screen", "lib.smi", "--scorer", "filter", "-o", "props.csv", "-j", "2")
    assert "records in 300 = rows 300 + rejected 0" in screen
    assert len((work / "props.csv").read_text().splitlines()) == 301
    verb("report", "props.csv.run")
    assert (work / "props.csv.run" / "report.png").stat().st_size > 0
    program = [str(python), "-c", "open('lib.smi').read()"]
    profiled = _run([molsift, "profile", "-o", "p.json", "--", *program], work, env)
    assert "1 process traced" in profiled.stderr
    log = json.loads((work / "p.json").read_text())
    files = [r["file"] for p in log["processes"] for r in p["records"]]
    assert str(work / "lib.smi") in files  # the tracer ran inside the program
    assert not [p for p in work.iterdir() if p.name.startswith(".molsift")]  # nothing left
    assert "findings" in json.loads(verb("insights", "p.json", "--format", "json"))
    # serve: a live server on a free loopback port answers a search
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [molsift, "serve", "lib.store", "--port", str(port)],
        cwd=work,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/search?db=lib&query=CC(%3DO)Nc1ccc(O)cc1&k=3"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=30) as r:
                    answer = json.loads(r.read())
                break
            except urllib.error.URLError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "molsift serve did not start"
                time.sleep(0.2)
        assert answer["total"] == 3 and len(answer["hits"]) == 3
        for path, words in (("/", b"<title>molsift search"), ("/static/app.js", b"api/v1")):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
                assert words in r.read()  # the page ships in the wheel
    finally:
        server.terminate()
        server.wait(30)
    elapsed = time.monotonic() - start
    print(f"wheel built, installed and every verb run in {elapsed:.0f} s")


# ---- issue 40, defect 15: a newcomer's clone tests everything ----


def test_the_vina_example_ships_with_the_repository():
    """The Vina tests skipped unless `../shared/data/vina_1iep` sat beside the repository: the
    example now ships in data/vina_1iep (small, with its license and origin) and the tests read
    it from there."""
    example = ROOT / "data" / "vina_1iep"
    names = {"1iep_receptor.pdbqt", "1iep_receptor.box.txt", "1iep_ligand.sdf"}
    assert names | {"LICENSE", "README.md"} == {p.name for p in example.iterdir()}
    assert "Apache License" in (example / "LICENSE").read_text()
    readme = (example / "README.md").read_text()
    assert all(name in readme for name in names) and "ccsb-scripps/AutoDock-Vina" in readme
    assert sum(p.stat().st_size for p in example.iterdir()) < 300_000
    tests = (ROOT / "tests" / "test_vina.py").read_text()
    assert 'ROOT / "data" / "vina_1iep"' in tests and "skipif" not in tests


def test_extras_bring_parquet_and_hdf5():
    """`pip install .[all]` (or `.[parquet,hdf5]`) brings what Parquet and HDF5 output need."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def names(extra: str) -> set:
        return {req.split(">")[0].split("=")[0].split("[")[0].strip() for req in extras[extra]}

    assert "pyarrow" in names("parquet") and "h5py" in names("hdf5")
    assert {"pyarrow", "h5py"} <= names("all")
    readme = (ROOT / "README.md").read_text()
    assert "'.[all]'" in readme and "'.[parquet]'" in readme and "'.[hdf5]'" in readme


def test_the_tree_holds_no_downloaded_wheels():
    """Issue 40, defect 18: two downloaded wheels (pyahocorasick, smizip) sat at the repository
    root; none may, and git ignores any that a download leaves there."""
    assert sorted(p.name for p in ROOT.glob("*.whl")) == []
    assert "*.whl" in (ROOT / ".gitignore").read_text().splitlines()
