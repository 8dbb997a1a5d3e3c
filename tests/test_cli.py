"""The command line as a user meets it: help for every verb, count, ingest, info, and one-line
errors with exit status 2. Ingest writes the one store (format version 2, every index); a
version-1 store (made here through the Python API, `ingest(..., version=1)`, as only old stores
are) is read by `molsift upgrade` alone, and every other verb refuses it in one line."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import shlex
import subprocess
import sys

import pytest
from conftest import fresh_dir, run_documented_line


def molsift(*args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", *map(str, args)], capture_output=True, text=True
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


VERBS = [
    "count",
    "ingest",
    "search",
    "substructure",
    "analogs",
    "lookup",
    "screen",
    "report",
    "index",
    "info",
    "upgrade",
    "serve",
    "profile",
    "insights",
    "cube",
]


@pytest.mark.parametrize("verb", [[], *([v] for v in VERBS)])
def test_help(verb):
    out = molsift(*verb, "--help").stdout
    assert "usage: molsift" in out


def verb_parsers() -> dict:
    from molsift.cli import build_parser

    return build_parser()._subparsers._group_actions[0].choices


def test_every_verb_is_offered():
    assert list(verb_parsers()) == VERBS


def help_examples(verb: str) -> list:
    """The example command lines that end `molsift VERB --help`."""
    help_text = verb_parsers()[verb].format_help()
    head, _, examples = help_text.rpartition("\nexamples:\n")
    assert head, help_text
    return examples.splitlines()


@pytest.mark.parametrize("verb", VERBS)
def test_help_ends_with_examples_that_parse(verb):
    """Every verb's help ends with 2 to 4 example command lines, each accepted by the parser
    as it is written (options that exist, values of the right kind)."""
    from molsift.cli import build_parser

    lines = help_examples(verb)
    assert 2 <= len(lines) <= 4, lines
    for line in lines:
        words = shlex.split(line, comments=True)
        start = words.index("molsift")  # after `mpirun -n 4` where there is one
        assert words[start + 1] == verb and all(w != "molsift" for w in words[:start]), line
        build_parser().parse_args(words[start + 1 :])  # exits with status 2 if it does not parse


def test_help_examples_run_on_the_bundled_data(tmp_path):
    """The examples are real: those that need only the bundled data (and what earlier ones
    made) run as a user would, in this order, with the venv's `molsift`, and exit with 0.
    `old.store` is a version-1 store, as a user upgrading one has (no command writes it)."""
    from molsift.ingestion import ingest

    cwd = fresh_dir(tmp_path)
    data = cwd / "data" / "nci_first_5k.smi"
    ingest(data, cwd / "old.store", workers=1, pattern=False, progress=False, version=1)
    ran = set()
    verbs = (
        "count",
        "ingest",
        "index",
        "info",
        "search",
        "substructure",
        "analogs",
        "upgrade",
        "lookup",
        "screen",
        "report",
        "cube",
    )
    for verb in (*verbs, "insights"):
        for line in help_examples(verb):
            if run_documented_line(line, cwd):
                ran.add(verb)
    assert ran == set(VERBS) - {"profile", "serve"}  # serve runs until stopped: test_serve.py


def stated_defaults(help_text: str) -> list:
    """("", "2") for "(default 2", (":", "all") for "(default: all cores)": a value, or words
    saying what the library does when the option is not given (None is passed on)."""
    return re.findall(r"\(default(:?) ([^\s,;:)]+)", help_text)


def core_defaults() -> dict:
    """Defaults of options that pass None on: the reader's (Rust core) and search's -k."""
    from molsift import _core
    from molsift.cli.search import DEFAULT_K

    return {
        "read_buffer": _core.DEFAULT_READ_BUFFER,
        "max_record_bytes": _core.DEFAULT_MAX_LINE_RECORD_BYTES,  # SDF's: test above
        "k_nearest": DEFAULT_K,
    }


def shown(value) -> set:
    """How a help text may write a default value: 2048, 500.0, 300 (for 300.0), 1MiB."""
    from molsift.cli.common import size_text

    forms = {str(value)}
    if isinstance(value, float):
        forms.add(f"{value:g}")
    if isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        forms.add(size_text(value))
    return forms


@pytest.mark.parametrize("verb", VERBS)
def test_help_defaults_equal_the_code_defaults(verb):
    """Issue 15: every "(default X)" of a help text is the default the code uses (argparse's,
    which the verbs take from the library's signature, or the core's where None is passed on),
    every option with a default value says it, and "(default: words)" only where the command
    line passes None on and the library decides."""
    checked = 0
    top = verb_parsers()[verb]
    # a verb with actions (`molsift cube info|convert|...`): their options too
    subs = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    parsers = [top, *(p for a in subs for p in a.choices.values())]
    for parser, action in ((p, a) for p in parsers for a in p._actions):
        if isinstance(action, argparse._SubParsersAction):
            continue
        if action.default is argparse.SUPPRESS or isinstance(
            action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction)
        ):
            continue
        name = "/".join(action.option_strings) or action.dest
        expanded = parser._get_formatter()._expand_help(action) if action.help else ""
        stated = stated_defaults(expanded)  # with %(default)s filled in, as the user reads it
        real = action.default
        if real is None and action.dest in core_defaults():
            real = core_defaults()[action.dest]
        if real is not None and real != []:
            assert any(not words for words, _ in stated), f"{verb} {name}: default {real} unsaid"
        for words, value in stated:
            if words:
                assert real is None, f"{verb} {name}: help says '(default: {value}...' for {real}"
            else:
                assert value in shown(real), f"{verb} {name}: help says {value}, code uses {real}"
            checked += 1
    assert checked or verb in ("index", "profile")


def test_count_prints_records_and_amplification(bundled_smi):
    proc = molsift("count", bundled_smi)
    assert proc.stdout.split("\t")[0] == "4999"
    assert "read amplification" in proc.stderr
    counters = json.loads(molsift("count", bundled_smi, "--json").stdout)
    assert counters["records"] == 4999 and counters["bytes_read"] >= counters["bytes"]


def test_ingest_then_info(tmp_path, bundled_smi):
    import molsift as api

    out = tmp_path / "s"
    proc = molsift("ingest", bundled_smi, "-o", out)
    assert "records in 4,999 = molecules stored" in proc.stdout
    assert "read amplification" in proc.stdout
    info = molsift("info", out).stdout
    assert "format      molsift-store v2" in info and "molecules   4,991" in info
    assert re.search(r"all \d+ files verified", info)
    assert "substructure index present" in info and "exact-match index present" in info
    # the first molecules in store order: canonical SMILES order, the first in bytes this one
    assert "stored in SMILES order" in info and "BrC(Br)(Br)c1ccc2ccccc2n1" in info
    store = api.open_store(out)
    for i in range(5):
        row = rf"^\s+{i}\s+{re.escape(store.ids[i])}\s+{re.escape(store.smiles[i])}$"
        assert re.search(row, info, re.M), row


def test_errors_are_one_line_with_exit_2(tmp_path):
    proc = molsift("ingest", tmp_path / "none.smi", "-o", tmp_path / "s", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("molsift: error:") and "none.smi" in proc.stderr
    (tmp_path / "s").mkdir()
    proc = molsift("info", tmp_path / "s", check=False)
    assert proc.returncode == 2 and "not a molsift store" in proc.stderr


def test_corrupted_store_is_refused(tmp_path, bundled_smi):
    out = tmp_path / "s"
    molsift("ingest", bundled_smi, "-o", out, "-q")
    fps = out / "planes.data.u8"  # the fingerprints, as compressed bit planes
    data = bytearray(fps.read_bytes())
    data[12345] ^= 1
    fps.write_bytes(bytes(data))
    proc = molsift("info", out, check=False)
    assert proc.returncode == 2 and "corrupted" in proc.stderr and "planes.data.u8" in proc.stderr
    with open(fps, "r+b") as f:
        f.truncate(len(data) - 256)
    proc = molsift("info", out, "--no-verify", check=False)
    assert proc.returncode == 2 and "truncated" in proc.stderr


def test_exit_codes_are_documented_in_help():
    """Issue 14, defect 7: the exit codes, 3 (nothing usable) among them, are in `--help`."""
    out = molsift("--help").stdout
    assert "exit status:" in out and "nothing usable" in out
    assert all(f"\n  {code} " in out for code in (0, 1, 2, 3, 130))


@pytest.mark.parametrize(
    "args, message",
    [
        (["-k", "0"], "must be at least 1"),
        (["-k", "-3"], "must be at least 1"),
        (["-t", "1.5"], "between 0 and 1"),
        (["-t", "-0.1"], "between 0 and 1"),
        (["-t", "x"], "not a number"),
    ],
)
def test_search_k_0_and_threshold_out_of_range_are_refused(tmp_path, args, message):
    """Issue 14, defect 8: `-k 0` silently returned 10 hits."""
    proc = molsift("search", tmp_path / "no.store", "-q", "CCO", *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "port, message",
    [
        ("99999", "must be a port from 0 to 65535 (0: a free one), got 99999"),
        ("65536", "must be a port from 0 to 65535 (0: a free one), got 65536"),
        ("-5", "must be a port from 0 to 65535 (0: a free one), got -5"),
        ("x", "not a whole number: 'x'"),
    ],
)
def test_serve_port_out_of_range_is_refused_by_argparse(tmp_path, port, message):
    """`serve --port 99999` said :99999 and listened on 34463 (the port mod 65536); `--port -5`
    printed its URL, then uvicorn's `[Errno -8] Servname not supported`, exit 3. A port is
    0 to 65535, refused in words, exit 2, before any store is opened."""
    proc = molsift("serve", tmp_path / "no.store", "--port", port, check=False)
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == f"molsift serve: error: argument --port: {message}", last
    args = verb_parsers()["serve"].parse_args(["s.store", "--port", "0"])
    assert args.port == 0
    assert verb_parsers()["serve"].parse_args(["s.store", "--port", "65535"]).port == 65535


@pytest.mark.parametrize(
    "option", ["--timeout", "--queue-wait", "--depict-timeout", "--read-timeout", "--keep-alive"]
)
def test_serve_time_limits_beyond_a_year_are_refused_by_argparse(tmp_path, option):
    """`serve --timeout 1e300` started, then every analog search was a 500: the Rust core's
    clock cannot hold the limit (a panic in the worker). A time limit is at most a year."""
    for bad in ("1e300", "31536001", "inf"):
        proc = molsift("serve", tmp_path / "no.store", option, bad, check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            f"molsift serve: error: argument {option}: must be a positive number of seconds, "
            f"at most 31536000 (a year), got {bad}"
        )
    args = verb_parsers()["serve"].parse_args(["s.store", option, "31536000"])
    assert getattr(args, option[2:].replace("-", "_")) == 31536000


def test_more_hits_than_any_store_holds_means_every_hit(tmp_path):
    """`search -k 99999999999999999999` and `analogs -k` as large were an OverflowError
    traceback (exit 1) from the Rust core: a count beyond any store is every hit."""
    from molsift import ingest

    smi = tmp_path / "three.smi"
    smi.write_text("CCO a\nCCN b\nCCCO c\n")
    store = tmp_path / "three.store"
    ingest(smi, store, workers=1, progress=False)
    huge = "99999999999999999999"
    for verb, args in (
        ("search", ["-q", "CCO", "-k", huge]),
        ("analogs", ["-q", "CCO", "--dist", "2", "-k", huge]),
        ("substructure", ["-q", "CC", "--max-hits", huge]),
    ):
        proc = molsift(verb, store, *args)
        assert len(proc.stdout.splitlines()) == 1 + 3, (verb, proc.stdout)


def test_info_shows_the_analog_index(tmp_path, bundled_smi):
    """`molsift info STORE` had lines for search, substructure and lookup, none for the analog
    index (a set's info says `analogs in every shard` or `missing`)."""
    from molsift.ingestion import ingest

    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:50]))
    ingest(small, tmp_path / "a.store", workers=1, progress=False)
    ingest(small, tmp_path / "n.store", workers=1, progress=False, analogs=False)
    header = json.loads((tmp_path / "a.store" / "analogs.json").read_text())
    info = molsift("info", tmp_path / "a.store").stdout
    line = re.search(r"^analogs     index present \((.*)\)$", info, re.M)
    assert line, info
    assert line.group(1).startswith(f"{header['skeletons']:,} distinct skeletons; ")
    assert line.group(1).endswith("bytes/molecule; molsift analogs")
    info = molsift("info", tmp_path / "n.store").stdout
    assert "\nanalogs     no index (molsift index STORE --analogs)\n" in info, info


def test_a_store_of_no_molecules_has_no_bytes_per_molecule(tmp_path):
    """`molsift info` of a store of no molecules said "74,491 bytes, 74491.0 bytes/molecule"
    (the bytes divided by 1) on every size line and in --json, and `molsift index` "(12.0
    B/molecule)": no per-molecule figure where there are no molecules (null in --json)."""
    from molsift.ingestion import ingest

    empty = tmp_path / "empty.smi"
    empty.write_text("")
    ingest(empty, tmp_path / "e.store", workers=1, progress=False)
    info = molsift("info", tmp_path / "e.store").stdout
    assert "molecules   0 " in info and "/molecule" not in info, info
    assert "\nbytes by file (no molecules):\n" in info and "bytes per molecule" not in info
    sizes = json.loads(molsift("info", tmp_path / "e.store", "--json").stdout)["sizes"]
    assert sizes["bytes_per_molecule"] is None
    assert {f["bytes_per_molecule"] for f in sizes["files"].values()} == {None}
    done = molsift("index", tmp_path / "e.store", "--analogs", "-j", "1")
    assert "for 0 molecules" in done.stdout and "/molecule" not in done.stdout, done.stdout


JOBS_LINES = {  # each verb's -j, before any of its work: no file here exists
    "count": ["count", "lib.smi"],
    "ingest": ["ingest", "lib.smi", "-o", "z.store", "--overwrite"],
    "search": ["search", "no.store", "-q", "CCO"],
    "substructure": ["substructure", "no.store", "-q", "CCO"],
    "analogs": ["analogs", "no.store", "-q", "CCO"],
    "lookup": ["lookup", "no.store", "-q", "CCO"],
    "screen": ["screen", "lib.smi", "--scorer", "filter", "-o", "p.csv"],
    "index --pattern": ["index", "no.store", "--pattern"],
    "index --analogs": ["index", "no.store", "--analogs"],
    "upgrade": ["upgrade", "old.store", "-o", "new.store"],
    "cube convert": ["cube", "convert", "no.cube", "-o", "d.npy"],
}


@pytest.mark.parametrize("n", ["-1", "0"])
@pytest.mark.parametrize("verb", JOBS_LINES)
def test_jobs_below_1_are_refused_by_argparse(tmp_path, verb, n):
    """A negative -j was a traceback (OverflowError, ingest's after reading every record), and
    -j 0 ran on 0 threads, all cores or one process, by verb; substructure and analogs alone
    refused both. Every -j is now a whole number >= 1, refused in words, exit 2."""
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", *JOBS_LINES[verb], "-j", n],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"molsift [a-z ]+: error: argument -j/--\w+: must be at least 1, got {n}", last
    )
    assert list(tmp_path.iterdir()) == []


def test_every_jobs_help_says_at_least_1():
    parsers = verb_parsers()
    for verb, words in JOBS_LINES.items():
        parser = parsers[words[0]]
        if words[0] == "cube":
            parser = parser._subparsers._group_actions[0].choices[words[1]]
        [jobs] = [a for a in parser._actions if "-j" in a.option_strings]
        assert jobs.metavar == "N" and "N >= 1" in jobs.help, verb


def test_search_without_a_query_is_an_error_exit_2(tmp_path):
    """It exited 1 (documented as "a bug") through SystemExit; errors exit 2 with one line."""
    proc = molsift("search", tmp_path / "no.store", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "molsift: error: give a query: -q SMILES or --queries FILE"


@pytest.mark.parametrize("verb", ["ingest", "screen"])
def test_max_record_bytes_help_equals_the_readers_default(verb):
    """Issue 14, defect 8: the help said 1 MiB, the reader used 64 KiB for SMILES lines."""
    from molsift import _core
    from molsift.cli import build_parser
    from molsift.cli.common import size_text

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[verb]
    helps = {a.dest: a.help for a in sub._actions}
    assert size_text(_core.DEFAULT_MAX_LINE_RECORD_BYTES) == "64KiB"
    assert (
        f"default {size_text(_core.DEFAULT_MAX_LINE_RECORD_BYTES)} for SMILES"
        in helps["max_record_bytes"]
    )
    assert f"{size_text(_core.DEFAULT_MAX_SDF_RECORD_BYTES)} for SDF" in helps["max_record_bytes"]
    assert f"default {size_text(_core.DEFAULT_READ_BUFFER)}" in helps["read_buffer"]


class Called(Exception):
    """Raised by a stand-in for a library function, once it has kept its keywords."""


def keywords_passed(monkeypatch, module, name: str, argv: list) -> dict:
    """The keywords `molsift ARGV` passes to `module.name`, which is not run."""
    from molsift.cli import build_parser

    calls = []

    def stand_in(*args, **kwargs):
        calls.append(kwargs)
        raise Called

    args = build_parser().parse_args(argv)
    monkeypatch.setattr(module, name, stand_in)
    with pytest.raises(Called):
        args.func(args)
    return calls[0]


def signature_defaults(function) -> dict:
    return {n: p.default for n, p in inspect.signature(function).parameters.items()}


@pytest.mark.parametrize(
    "argv",
    [
        ["count", "lib.smi"],
        ["ingest", "lib.smi", "-o", "lib.store"],
        ["screen", "lib.smi", "--scorer", "filter", "-o", "out.csv"],
    ],
)
def test_options_not_given_pass_the_librarys_own_defaults(monkeypatch, argv):
    """Issue 15: what a verb passes when no option is given is the library function's default
    (inspect.signature): the command line keeps no copy that could drift from it."""
    import molsift.cli.count
    import molsift.cli.screen
    import molsift.ingestion
    from molsift.spec import FingerprintSpec

    module, name = {
        "count": (molsift.cli.count, "count_records"),
        "ingest": (molsift.ingestion, "ingest"),
        "screen": (molsift.cli.screen, "screen"),
    }[argv[0]]
    defaults = signature_defaults(getattr(module, name))
    passed = keywords_passed(monkeypatch, module, name, argv)
    if argv[0] == "ingest":  # ingest(fingerprint=None) means FingerprintSpec()
        assert defaults.pop("fingerprint") is None
        assert passed.pop("fingerprint") == FingerprintSpec()
    known = {k: v for k, v in passed.items() if k in defaults}  # screen's **fmt aside
    assert len(known) >= 3 and known == {k: defaults[k] for k in known}


def test_search_passes_the_librarys_defaults_and_k_10(monkeypatch):
    import molsift.store
    from molsift.cli.search import DEFAULT_K
    from molsift.search import search_batch

    class Store:
        def search_batch(self, queries, **kwargs):
            raise Called(kwargs)

    monkeypatch.setattr(molsift.store, "open_store", lambda path, verify: Store())
    passed = keywords_passed(monkeypatch, Store, "search_batch", ["search", "s", "-q", "CCO"])
    defaults = signature_defaults(search_batch)
    assert passed == {"threshold": defaults["threshold"], "k": DEFAULT_K, "threads": 1}
    assert defaults["threads"] == 1 and defaults["k"] is None  # -k 10 is the command's choice


@pytest.mark.parametrize("scorer", ["filter", "similarity", "vina"])
def test_scorer_options_default_to_the_scorers_own(tmp_path, scorer):
    """A scorer built from the command line with no scorer option given has every default of
    its class (filter's rules, similarity's fingerprint spec, vina's exhaustiveness ...)."""
    from molsift.cli import build_parser
    from molsift.scorers import scorer_class

    required = {
        "filter": [],
        "similarity": ["--ref", "CCO"],
        "vina": ["--vina-receptor", tmp_path / "r.pdbqt", "--vina-box", tmp_path / "box.txt"],
    }[scorer]
    if scorer == "vina":
        pytest.importorskip("vina", reason="the vina scorer needs AutoDock Vina")
        (tmp_path / "r.pdbqt").write_text("")
        (tmp_path / "box.txt").write_text(
            "center_x = 0\ncenter_y = 0\ncenter_z = 0\nsize_x = 20\nsize_y = 20\nsize_z = 20\n"
        )
    argv = ["screen", "lib.smi", "--scorer", scorer, "-o", "out.csv", *map(str, required)]
    cls = scorer_class(scorer)
    made = cls.from_args(build_parser().parse_args(argv))
    defaults = class_defaults(cls)
    assert defaults and {k: getattr(made, k) for k in defaults} == defaults


def class_defaults(cls) -> dict:
    """The defaults of a scorer class: of its dataclass fields (factories called), else of its
    __init__."""
    if dataclasses.is_dataclass(cls):
        missing = dataclasses.MISSING
        return {
            f.name: f.default_factory() if f.default is missing else f.default
            for f in dataclasses.fields(cls)
            if f.default is not missing or f.default_factory is not missing
        }
    empty = inspect.Parameter.empty
    return {k: v for k, v in signature_defaults(cls).items() if v is not empty}


def test_oversized_record_reason_says_the_id_is_unknown(tmp_path):
    """Issue 14, defect 8: an over-long record was rejected under its line number as its id.
    It keeps its id when the record's first --max-record-bytes hold it, else the reason says
    that the id is unknown."""
    src = tmp_path / "long.smi"
    src.write_text("CCO ok\n" + "C" * 200 + " long_one\n" + "CCN named " + "x" * 200 + "\n")
    proc = molsift("ingest", src, "-o", tmp_path / "s", "--max-record-bytes", "100", "-q")
    rows = [r.split("\t") for r in (tmp_path / "s" / "rejects.tsv").read_text().splitlines()[1:]]
    assert rows[0][1] == "2" and rows[0][3] == "2" and "id is unknown" in rows[0][4], rows
    assert (
        rows[1][1] == "3" and rows[1][3] == "named" and "read from the record's start" in rows[1][4]
    )
    assert proc.returncode == 0


def test_count_reports_the_read_calls_of_a_compressed_stream(tmp_path, bundled_smi):
    """Issue 14, defect 8: `count` said "0 read calls" for gzip input. The calls and bytes are
    those made on the compressed file."""
    import gzip

    gz = tmp_path / "nci.smi.gz"
    gz.write_bytes(gzip.compress(bundled_smi.read_bytes()))
    counters = json.loads(molsift("count", gz, "--json").stdout)
    assert counters["records"] == 4999 and counters["compression"] == "gzip"
    assert counters["read_calls"] >= 2 and counters["bytes_read"] == gz.stat().st_size
    proc = molsift("count", gz)
    assert (
        f"{counters['read_calls']:,} read calls" in proc.stderr
        and " 0 read calls" not in proc.stderr
    )


def test_parquet_output_round_trips(tmp_path, bundled_smi):
    """Issue 14, defect 8: `-o hits.parquet` needed pyarrow, which setup did not install."""
    pq = pytest.importorskip("pyarrow.parquet", reason="scripts/setup.sh installs pyarrow")
    molsift("ingest", bundled_smi, "-o", tmp_path / "s", "-q")
    molsift(
        "search",
        tmp_path / "s",
        "-q",
        "CC(=O)Nc1ccc(O)cc1",
        "-k",
        "5",
        "-o",
        tmp_path / "h.parquet",
    )
    tsv = molsift("search", tmp_path / "s", "-q", "CC(=O)Nc1ccc(O)cc1", "-k", "5").stdout
    table = pq.read_table(tmp_path / "h.parquet").to_pylist()
    rows = [line.split("\t") for line in tsv.splitlines()[1:]]
    assert len(table) == len(rows) == 5
    assert [
        (r["query_id"], r["target_id"], f"{r['score']:.6f}", r["target_smiles"]) for r in table
    ] == [tuple(r) for r in rows]


def test_output_piped_into_head_is_not_a_traceback(tmp_path, bundled_smi):
    """`molsift info STORE | head -3` printed a BrokenPipeError traceback."""
    store = tmp_path / "s.store"
    molsift("ingest", bundled_smi, "-o", store, "-q")
    # about 400 KB of output, far more than a pipe holds: the writes after head exits fail
    r = subprocess.run(
        f"{sys.executable} -m molsift info {store} -n 5000 | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
    assert r.returncode == 141, r.returncode


def test_memory_limits_are_one_line_not_a_traceback(tmp_path, bundled_smi):
    """Issue 40, defect 12: under `ulimit -v` of 120-250 MB, numpy's and RDKit's libraries fail
    to load (`failed to map segment`, `OpenBLAS error`, MemoryError): tracebacks and exit 1.
    Each command either works or says in one line that memory ran out, with the limit (exit 2);
    at 150 MB RDKit does not load at all, so at least one command says so."""
    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:200]))
    store = tmp_path / "s.store"
    molsift("ingest", small, "-o", store, "-j", "1", "-q")
    said = []
    for limit in (120_000, 150_000, 200_000, 250_000):  # KiB
        for words in (
            ["count", bundled_smi],
            ["info", store],
            ["search", store, "-q", "CCO", "-k", "1"],
        ):
            line = shlex.join([sys.executable, "-m", "molsift", *map(str, words)])
            r = subprocess.run(
                ["bash", "-c", f"ulimit -v {limit}; {line}"], capture_output=True, text=True
            )
            what = (limit, words[0], r.returncode, r.stderr)
            assert "Traceback" not in r.stderr and r.returncode in (0, 2), what
            if r.returncode == 2:
                assert r.stderr.startswith("molsift: error: out of memory: "), what
                assert r.stderr.count("\n") == 1, what
                said_limit = f"the address-space limit (ulimit -v) is {limit / 1024:,.0f} MiB"
                assert said_limit in r.stderr and f"({limit:,} KiB)" in r.stderr, what
                said.append(what)
    assert said


@pytest.fixture(scope="module")
def query_stores(tmp_path_factory, bundled_smi) -> dict:
    """The bundled data as ingest writes it (the one store, every index), and the bundled cube
    file: what the verbs that take -o read."""
    from conftest import BUNDLED_CUBE

    import molsift

    d = tmp_path_factory.mktemp("query-stores")
    molsift.ingest(bundled_smi, d / "nci.store", workers=2, progress=False)
    return {"store": d / "nci.store", "cube": BUNDLED_CUBE}


# every verb whose -o names a file: its command line without -o ({store}, {cube}: inputs)
OUTPUT_VERBS = {
    "lookup": ["lookup", "{store}", "-q", "CCO"],
    "search": ["search", "{store}", "-q", "CCO"],
    "substructure": ["substructure", "{store}", "-q", "c1ccccc1"],
    "analogs": ["analogs", "{store}", "-q", "CCO"],
    "cube convert": ["cube", "convert", "{cube}"],
    "cube diff": ["cube", "diff", "{cube}", "{cube}"],
    "cube slice": ["cube", "slice", "{cube}"],
    "screen": ["screen", "{smi}", "--scorer", "filter", "-j", "1"],
    "report": ["report", "{store}"],
    "insights": ["insights", "{store}"],
    "profile": ["profile", "--", "true"],
}


@pytest.mark.parametrize("where", ["missing directory", "a directory"])
@pytest.mark.parametrize("verb", OUTPUT_VERBS)
def test_bad_output_path_is_one_line_exit_2_before_any_work(
    query_stores, bundled_smi, tmp_path, capsys, verb, where
):
    """Issue 40, defect 6: `-o /nonexistent/dir/out.tsv` or `-o /tmp` was a FileNotFoundError
    or IsADirectoryError traceback (exit 1), after the work was done; `cube slice -o DIR`
    wrote DIR.png. The path is checked first: one line naming it and why, exit 2."""
    from molsift.cli import main

    out = tmp_path / "missing" / "out.tsv" if where == "missing directory" else tmp_path / "adir"
    if where == "a directory":
        out.mkdir()
    inputs = {k: str(v) for k, v in query_stores.items()} | {"smi": str(bundled_smi)}
    argv = [word.format(**inputs) for word in OUTPUT_VERBS[verb]]
    at = argv.index("--") if "--" in argv else len(argv)
    assert main([*argv[:at], "-o", str(out), *argv[at:]]) == 2
    captured = capsys.readouterr()
    reason = "no such directory" if where == "missing directory" else "is a directory"
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"molsift: error: {out}: ") and reason in captured.err
    assert captured.out == ""
    made = ["adir"] if where == "a directory" else []  # nothing written, not even adir.png
    assert sorted(p.name for p in tmp_path.iterdir()) == made
    assert not made or not any(out.iterdir())


@pytest.fixture(scope="module")
def v1_store(tmp_path_factory, bundled_smi):
    """A version-1 store of 50 molecules, with its indexes (as old stores have them)."""
    from molsift.ingestion import ingest

    small = tmp_path_factory.mktemp("v1") / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:50]))
    ingest(small, small.with_name("old.store"), workers=1, progress=False, version=1)
    return small.with_name("old.store")


@pytest.mark.parametrize(
    "words",
    [
        ["info"],
        ["search", "-q", "CCO"],
        ["substructure", "-q", "c1ccccc1"],
        ["analogs", "-q", "CCO"],
        ["lookup", "-q", "CCO"],
    ],
    ids=lambda w: w[0],
)
def test_a_version_1_store_is_refused_in_one_line_naming_upgrade(v1_store, words):
    """Only `molsift upgrade` reads a version-1 store; every verb that reads a store says so in
    one line (exit 2) that tells how to convert it."""
    r = molsift(words[0], v1_store, *words[1:], check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == "", r.stderr
    assert r.stderr.startswith(f"molsift: error: {v1_store}: a version-1 store"), r.stderr
    assert f"molsift upgrade {v1_store} -o NEW" in r.stderr


def test_messages_say_what_the_path_is(tmp_path, bundled_smi):
    """Issue 40, defect 16: `upgrade` of a version-2 store said "opened with the reader of
    another version"; `report` of a folder that is not a run talked of --resume; a store that
    is not there must be named. Each is one line, exit 2, saying what the path is."""
    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:50]))
    from molsift.ingestion import ingest

    v1, v2 = tmp_path / "s.store", tmp_path / "s.v2.store"
    ingest(small, v1, workers=1, progress=False, version=1)  # as an old store
    molsift("upgrade", v1, "-o", v2)
    r = molsift("upgrade", v2, "-o", tmp_path / "again.store", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{v2}: already a version-2 store (at {v2})" in r.stderr, r.stderr
    assert "another version" not in r.stderr and not (tmp_path / "again.store").exists()
    for verb in (["search", "-q", "C"], ["substructure", "-q", "C"], ["info"]):
        r = molsift(verb[0], tmp_path / "nope.store", *verb[1:], check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"molsift: error: {tmp_path / 'nope.store'}: "), r.stderr
    for folder in (tmp_path, v1):  # a plain folder, a store: neither is a run
        r = molsift("report", folder, "-o", tmp_path / "r.png", check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"{folder}: not a screening run directory" in r.stderr, r.stderr
        assert "--resume" not in r.stderr
    r = molsift("report", tmp_path / "nope.run", check=False)
    assert r.returncode == 2 and "nope.run: no such directory" in r.stderr, r.stderr


def test_upgrade_output_that_cannot_be_a_store_says_why(v1_store, tmp_path):
    """`molsift upgrade OLD -o ''` said `molsift: error: : No such file or directory (os error
    2)`, naming nothing; `-o FILE/new.store` said FILE was an output directory that does not
    exist. One line each, exit 2, saying what is wrong with -o."""
    a_file = tmp_path / "a.smi"
    a_file.write_text("CCO\n")
    for out, said in (
        ("", "-o: an empty path: name the version-2 store to write"),
        (a_file / "new.store", f"{a_file}: is not a directory"),
    ):
        r = molsift("upgrade", v1_store, "-o", out, "-j", "1", check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert said in r.stderr, r.stderr
        assert "No such file" not in r.stderr and "does not exist" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.smi"]


def test_upgrade_more_workers_than_memory_holds_is_refused_before_any_work(v1_store, tmp_path):
    """`molsift upgrade OLD -o NEW -j 100000` of a store without a substructure index wrote
    the whole store first, then was refused when the index started its workers (of one with
    an index it was taken): refused before any work, as `ingest -j 100000` is."""
    r = molsift("upgrade", v1_store, "-o", tmp_path / "new.store", "-j", "100000", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "100,000 worker processes need at least" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_index_of_a_sets_shard_is_refused_as_the_set_is(tmp_path, bundled_smi):
    """A shard indexed alone would no longer match its set's set.json: refused in one line
    before anything is written, as the set itself is."""
    import molsift as package

    root = tmp_path / "s.set"
    package.ingest(bundled_smi, root, workers=1, shards=2, progress=False)
    shard = next(p for p in sorted(root.iterdir()) if p.is_dir())
    before = sorted((p.name, p.stat().st_mtime_ns) for p in shard.iterdir())
    proc = molsift("index", shard, "--analogs", "-j", "1", check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"a shard of the store set {root}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in shard.iterdir()) == before
    assert package.open_store(root) is not None  # the set still opens


@pytest.mark.parametrize(
    "argv, said",
    [
        (["info", "{store}", "-n", "-1"], "argument -n/--head: must be a number of molecules"),
        (["screen", "{smi}", "--scorer", "filter", "-o", "{tmp}/p.csv", "--writers", "0"],
         "argument --writers: must be at least 1"),
        (["screen", "{smi}", "--scorer", "similarity", "--ref", "", "-o", "{tmp}/p.csv"],
         "--ref '': reference 'ref1': an empty SMILES"),
    ],
    ids=["info-head", "screen-writers", "screen-empty-ref"],
)  # fmt: skip
def test_more_bad_values_are_one_line(tmp_path, bundled_smi, argv, said):
    import molsift as package

    store = tmp_path / "one.store"
    package.ingest(bundled_smi, store, workers=1, progress=False)
    words = [w.format(store=store, smi=bundled_smi, tmp=tmp_path) for w in argv]
    proc = molsift(*words, check=False)
    assert proc.returncode == 2, proc.stderr
    assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "p.csv.partial").exists()


def test_threads_the_system_will_not_start_slow_the_answer_never_change_it(tmp_path, bundled_smi):
    """`molsift count FILE -j 100000` was the core's panic ("failed to spawn thread: Os { code:
    11, kind: WouldBlock ... }") with a Python traceback and exit status 1, and so was
    `molsift analogs STORE -q ... -j 100000`. Under an address-space limit (`ulimit -v`: no
    thread stack past it maps, for root as well) the threads the system refuses now leave
    their work to the threads that started (molsift_tasks): the same answer as one thread."""
    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:300]))
    store = tmp_path / "s.store"
    molsift("ingest", small, "-o", store, "-j", "1", "-q")
    for words, limit in (
        (["count", bundled_smi], 2_000_000),  # KiB: 100,000 stacks of 2 MiB cannot all map
        (["analogs", store, "-q", "CCOc1ccccc1", "-k", "5"], 3_000_000),
        (["search", store, "--queries", small, "-k", "3"], 3_000_000),
    ):
        one = molsift(*words, "-j", "1")
        line = shlex.join([sys.executable, "-m", "molsift", *map(str, words), "-j", "100000"])
        r = subprocess.run(
            ["bash", "-c", f"ulimit -v {limit}; {line}"], capture_output=True, text=True
        )
        what = (words[0], r.returncode, r.stderr[-2000:])
        assert r.returncode == 0 and "panicked" not in r.stderr, what
        assert "Traceback" not in r.stderr, what
        assert r.stdout == one.stdout, what


@pytest.mark.parametrize(
    "option", [["--smiles-col", "smi"], ["--id-col", "id"], ["--delimiter", ","]]
)
def test_count_refuses_column_options_it_would_ignore(bundled_smi, option):
    """`molsift count FILE --smiles-col X` (or --id-col, --delimiter) counted as if the option
    were not there: a record is counted whatever its fields, so the options are refused."""
    r = molsift("count", bundled_smi, *option, check=False)
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == "", r.stderr


@pytest.mark.parametrize("verb", ["screen", "ingest"])
def test_more_worker_processes_than_memory_holds_are_refused_before_any_start(
    tmp_path, bundled_smi, verb
):
    """`molsift screen LIB -j 100000` went on to start 100,000 worker processes (and left a run
    directory behind when stopped): refused in one line, nothing written."""
    out = tmp_path / ("hits.csv" if verb == "screen" else "lib.store")
    scorer = ["--scorer", "filter"] if verb == "screen" else []
    r = molsift(verb, bundled_smi, *scorer, "-o", out, "-j", "100000", "-q", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "100,000 worker processes need at least" in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "words", [["info", ""], ["lookup", "", "-q", "CCO"], ["search", "", "-q", "CCO"]]
)
def test_an_empty_store_path_is_said_in_words(words):
    """`molsift info ''` said ": No such file or directory (os error 2)", naming nothing."""
    r = molsift(*words, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "an empty store path: name the store's directory" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def small_store(tmp_path_factory, bundled_smi):
    """60 molecules of the bundled data, every index: for the query verbs' messages."""
    import molsift

    d = tmp_path_factory.mktemp("small-store")
    small = d / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:60]))
    molsift.ingest(small, d / "small.store", workers=1, progress=False)
    return d / "small.store"


NOTE = "read as SMILES (one record a line): its suffix '.dat' names no input format"
QUERY_VERBS = {
    "search": ["-k", "1"],
    "substructure": ["--count"],
    "analogs": ["--dist", "0"],
    "lookup": [],
}


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_a_queries_file_of_an_unknown_suffix_is_said_to_be_read_as_smiles(
    small_store, tmp_path, capsys, verb
):
    """`molsift count x.cube` says on stderr that a file of an unknown suffix is read as
    SMILES; a query verb's `--queries q.dat` was read so without a word. It says it now, once,
    as count says it, unless --format was given (or the suffix is a SMILES file's)."""
    from molsift.cli import main

    queries = tmp_path / "q.dat"  # two of the store's molecules: lookup finds them (exit 0)
    queries.write_text("".join((small_store.parent / "small.smi").open().readlines()[:2]))
    argv = [verb, str(small_store), "--queries", str(queries), *QUERY_VERBS[verb]]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count(f"molsift: note: {queries}: {NOTE}") == 1, err
    assert main([*argv, "--format", "smiles"]) == 0
    assert "note" not in capsys.readouterr().err
    smi = queries.rename(tmp_path / "q.smi")
    assert main([verb, str(small_store), "--queries", str(smi), *QUERY_VERBS[verb]]) == 0
    assert "note" not in capsys.readouterr().err


def test_the_note_is_said_by_rank_0_alone(tmp_path, monkeypatch, capsys):
    """Under mpirun every rank reads the files' names: the note is rank 0's alone."""
    from molsift.cli.count import assumed_format_note

    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    for rank, said in ((1, False), (0, True)):
        monkeypatch.setenv("OMPI_COMM_WORLD_RANK", str(rank))  # the launcher's rank
        assumed_format_note(str(tmp_path / "lib.dat"), None)
        assert ("molsift: note: " in capsys.readouterr().err) == said, rank


@pytest.mark.parametrize("verb", ["substructure", "analogs", "search"])
def test_a_lone_bad_query_is_the_one_error_as_search_says_it(small_store, tmp_path, capsys, verb):
    """A lone bad `-q` was one `molsift: error:` line (exit 2) in search, but a skip line, "0 of
    1 query answered" and an empty table written to -o in substructure and analogs. It is the
    run's one error line, naming the query and why, in all three, nothing written; among other
    queries a bad one is still skipped and named, the others answered."""
    from molsift.cli import main

    out = tmp_path / "hits.tsv"
    assert main([verb, str(small_store), "-q", "C1CC", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("molsift: error: "), err
    assert "'C1CC'" in err and "pars" in err, err  # the query, and that it does not parse
    assert not out.exists()
    assert main([verb, str(small_store), "-q", "C1CC", "-q", "CCO", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "skipped" in err and "molsift: error" not in err, err
    assert out.read_text().startswith(("query", "query_id"))
    if verb != "search":
        assert "1 of 2 queries answered" in err, err


def test_the_header_option_says_it_is_for_smiles_and_csv_files():
    """--header's help said "(SMILES files; auto-detected)", though a CSV takes it too and an
    SDF refuses it."""
    parsers = verb_parsers()
    for verb in ("ingest", "count", "search", "substructure", "analogs", "lookup", "screen"):
        text = " ".join(parsers[verb].format_help().split())
        assert "--header the first line is a header (SMILES and CSV files, not SDF" in text, verb
        assert "(SMILES files; auto-detected)" not in text, verb


@pytest.mark.parametrize("where", ["before the verb", "after it"])
def test_io_log_dash_is_refused_not_a_file_named_dash(bundled_smi, tmp_path, monkeypatch, capsys,
                                                      where):  # fmt: skip
    """`--io-log -` wrote the log to a file named `-`. The log is JSON written at the end and
    standard output is the verb's own: refused in one line, exit 2, before any work."""
    from molsift.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["count", str(bundled_smi)]
    argv = ["--io-log", "-", *argv] if where == "before the verb" else [*argv, "--io-log", "-"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.out == "", captured.err
    assert captured.err.startswith("molsift: error: --io-log -: the I/O log is JSON"), captured.err
    assert list(tmp_path.iterdir()) == []


def test_lookup_dash_output_is_standard_output(small_store, tmp_path, monkeypatch):
    """`molsift lookup STORE -q X -o -` wrote its rows to a file named `-` (and nothing to the
    terminal), where search, substructure and analogs take `-o -` as standard output: it is
    standard output in lookup too, and its help says so."""
    monkeypatch.chdir(tmp_path)
    smiles = (small_store.parent / "small.smi").read_text().split()[0]
    r = molsift("lookup", small_store, "-q", smiles, "-o", "-")
    assert r.stdout.startswith("query\tfound\t") and "\tyes\t" in r.stdout, r.stdout
    assert not (tmp_path / "-").exists()
    assert "-o -: stdout" in molsift("lookup", "--help").stdout


def test_index_says_each_index_size_as_ingest_and_info_count_it(tmp_path, bundled_smi):
    """`molsift index STORE` said the substructure index was its screen planes alone (447,454
    bytes of the bundled data, where ingest said 858,314) and the analog index without
    analogs.json (161,254 against 162,094): each is now every file of the index, as ingest
    and info count it. `--pattern --analogs` together were refused ("not both") though they
    mean what neither means: both indexes."""
    store = tmp_path / "s.store"
    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:40]))
    done = molsift("ingest", small, "-o", store, "-j", "1", "--json")
    report = json.loads(done.stdout)
    r = molsift("index", store, "--pattern", "--analogs", "-j", "1")
    said = re.search(r"substructure index written to .*: ([\d,]+) bytes", r.stdout)
    analog = re.search(r"analog index written to .*, ([\d,]+) bytes", r.stdout)
    assert said and analog, r.stdout
    assert int(said.group(1).replace(",", "")) == report["pattern_bytes"], r.stdout
    assert int(analog.group(1).replace(",", "")) == report["analog_bytes"], r.stdout
    info = molsift("info", store, "-n", "0").stdout
    assert f"substructure index present ({said.group(1)} bytes, " in info, info
    assert f"; {analog.group(1)} bytes, " in info, info


def test_upgrade_help_says_the_substructure_index_is_carried_over():
    """`molsift upgrade --help` said every index was "computed again from the stored SMILES",
    while an old store's substructure index is carried over without parsing a molecule again
    (README, docs/store-format.md)."""
    text = " ".join(molsift("upgrade", "--help").stdout.split())
    assert "carried over" in text and "computed again" not in text, text
