"""The query verbs' hit tables as a reader meets them: every row of the tab-separated output
has the header's fields when an id holds a tab or a quote (the field is quoted, as Python's
csv module reads it back: `molsift.tsv`), and an empty query is refused or answered `invalid`,
never searched as a molecule of no atoms; `molsift info` says a count of one in the singular."""

from __future__ import annotations

import csv
import re
import subprocess

import pytest
from conftest import molsift_cmd, molsift_run

import molsift

#: ids a SMILES file can give: a tab (kept in the id: the rest of the line), quotes
ODD_IDS = ["x\ty", '"phen"ol', 'a "b" c']


@pytest.fixture(scope="module")
def odd_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("oddids")
    smi = root / "odd.smi"
    smi.write_text('CCO x\ty\nc1ccccc1O "phen"ol\nCCN a "b" c\n')
    molsift.ingest(smi, root / "odd.store", workers=1, progress=False)
    return root / "odd.store"


@pytest.mark.parametrize(
    "verb",
    [
        ["search", "-q", "CCO", "-k", "3"],
        ["substructure", "-q", "C"],
        ["analogs", "-q", "CCO", "--dist", "2"],
        ["lookup", "-q", "CCO", "-q", "Oc1ccccc1", "-q", "CCN"],
    ],
    ids=lambda v: v[0],
)
def test_ids_with_tabs_and_quotes_keep_every_row_whole(odd_store, verb):
    store = molsift.open_store(odd_store)
    assert sorted(store.ids) == sorted(ODD_IDS)  # the store keeps them as given
    proc = molsift_run(verb[0], odd_store, *verb[1:])
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(proc.stdout.splitlines(), delimiter="\t"))
    header, body = rows[0], rows[1:]
    assert all(len(r) == len(header) for r in body), proc.stdout
    column = "target_id" if verb[0] == "search" else "ids" if verb[0] == "lookup" else "id"
    got = sorted(r[header.index(column)] for r in body)
    # the analogs of CCO within 2 edits: CCO and CCN (phenol is farther)
    assert got == sorted(ODD_IDS if verb[0] != "analogs" else ["x\ty", 'a "b" c']), got


def test_tsv_fields_are_quoted_only_where_they_would_break_a_row():
    from molsift.tsv import field, row

    assert field("CHEMBL25") == "CHEMBL25"
    assert field(0.5) == "0.5"
    assert field("a\tb") == '"a\tb"'
    assert field('say "hi"') == '"say ""hi"""'
    line = row(["q", "a\tb", 'c"d', 3])
    assert next(csv.reader([line], delimiter="\t")) == ["q", "a\tb", 'c"d', "3"]


def test_an_empty_similarity_query_is_refused(odd_store):
    store = molsift.open_store(odd_store)
    for empty in ("", "   "):
        with pytest.raises(ValueError, match="empty query"):
            store.search(empty, k=3)
    proc = molsift_run("search", odd_store, "-q", "", "-k", "3")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == "molsift: error: empty query: give a SMILES"
    assert proc.stdout == ""


def test_an_empty_lookup_is_invalid_not_absent(odd_store):
    from molsift.substructure.query import QueryError

    store = molsift.open_store(odd_store)
    with pytest.raises(QueryError):
        store.lookup("")
    proc = molsift_run("lookup", odd_store, "-q", "", "-q", "CCO")
    rows = list(csv.reader(proc.stdout.splitlines(), delimiter="\t"))
    assert [r[1] for r in rows[1:]] == ["invalid", "yes"]
    assert "1 unparsable" in proc.stderr


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "1e19", "31536001"])
def test_a_bad_analogs_timeout_is_refused_before_any_output(odd_store, tmp_path, timeout):
    """`inf` passed this check and failed every query; `1e19` was a panic of the Rust core
    (a traceback, exit 1): a time limit is at most a year."""
    out = tmp_path / "hits.tsv"
    proc = molsift_run("analogs", odd_store, "-q", "CCO", "--timeout", timeout, "-o", out)
    assert proc.returncode == 2
    assert "--timeout must be a positive number of seconds" in proc.stderr
    assert not out.exists() and proc.stdout == ""  # no header-only file left behind


@pytest.mark.parametrize(
    "words",
    [["count"], ["ingest", "-o", "{tmp}/s.store"], ["lookup", "{store}", "--queries"]],
    ids=lambda w: w[0],
)
def test_inputs_that_are_not_files_are_named_for_what_they_are(odd_store, tmp_path, words):
    """A directory, standard input (`-`) or a pipe given as the input: the error says which,
    not "no such file"."""
    folder = tmp_path / "adir"
    folder.mkdir()
    for given, said in ((folder, "is a directory, not a file"),
                        ("-", "standard input is not read"),
                        ("/dev/stdin", "not a regular file")):  # fmt: skip
        argv = [w.format(tmp=tmp_path, store=odd_store) for w in words]
        argv = [*argv, given] if words[0] == "lookup" else [argv[0], given, *argv[1:]]
        proc = subprocess.run([*molsift_cmd(), *map(str, argv)], input="",
                              capture_output=True, text=True)  # fmt: skip
        assert proc.returncode == 2, (argv, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stderr, (argv, proc.stderr)


def test_an_io_log_that_cannot_be_written_is_refused_before_any_work(odd_store, tmp_path):
    """`--io-log` naming a directory: one line naming it, exit 2, no results printed first."""
    proc = molsift_run("--io-log", tmp_path, "search", odd_store, "-q", "CCO", "-k", "1")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert (
        proc.stderr.strip()
        == f"molsift: error: --io-log {tmp_path}: cannot write the I/O log: it is a directory"
    )


@pytest.mark.parametrize("verb", ["search", "substructure", "analogs", "lookup"])
def test_an_output_named_for_another_format_is_refused_before_any_work(odd_store, tmp_path, verb):
    """`-o hits.csv` (or `.json`; `.parquet` for lookup, which writes no Parquet) would have
    been TSV text under that name: refused in one line, nothing written; `.tsv` and a name
    without a suffix are TSV."""
    query = ["-q", "CCO"] + (["-k", "1"] if verb == "search" else [])
    bad = ["hits.csv", "hits.json"] + (["hits.parquet"] if verb == "lookup" else [])
    for name in bad:
        out = tmp_path / name
        proc = molsift_run(verb, odd_store, *query, "-o", out)
        assert proc.returncode == 2, proc.stderr
        assert f"molsift {verb} writes tab-separated text" in proc.stderr
        assert not out.exists()
    for name in ("hits.tsv", "hits"):
        proc = molsift_run(verb, odd_store, *query, "-o", tmp_path / name)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name).read_text().split("\t")[0] == "query" + (
            "_id" if verb == "search" else ""
        )


def test_info_says_one_in_the_singular(tmp_path):
    """`molsift info` on a store and a set of one molecule said `first 1 molecules`,
    `1 distinct skeletons` and `1 shards`."""
    smi = tmp_path / "one.smi"
    smi.write_text("CCO ethanol\n")
    for out, extra in ((tmp_path / "one.store", []), (tmp_path / "one.set", ["--shards", "1"])):
        done = molsift_run("ingest", smi, "-o", out, "-j", "1", "-q", *extra)
        assert done.returncode == 0, done.stderr
        info = molsift_run("info", out)
        assert info.returncode == 0, info.stderr
        assert "\nfirst 1 molecule (position" in info.stdout, info.stdout
        assert " 1 molecules" not in info.stdout and " 1 shards" not in info.stdout
    assert "(1 distinct skeleton; " in molsift_run("info", tmp_path / "one.store").stdout
    shard = re.search(r"^  shard-0000 +1 molecule +0\.\.0 ", info.stdout, re.M)
    assert "\n1 shard (set positions" in info.stdout and shard, info.stdout


def test_query_verbs_say_one_in_the_singular(odd_store):
    """The closing lines said `1 queries, 1 hits ... 1 thread(s)` (search), `1 of 1 queries
    answered, 1 hits` (substructure, analogs) and `1 queries:` (lookup)."""
    one = "molsift: 1 of 1 query answered, 1 hit in "
    runs = {
        "search": (["-q", "CCO", "-k", "1"], "molsift: 1 query, 1 hit in "),
        "substructure": (["-q", "CCO"], one),
        "analogs": (["-q", "CCO", "--dist", "0", "-k", "1"], one),
        "lookup": (["-q", "CCO"], "molsift: 1 query: 1 found, "),
    }
    for verb, (args, line) in runs.items():
        done = molsift_run(verb, odd_store, *args)
        assert done.returncode == 0, done.stderr
        assert line in done.stderr, (verb, done.stderr)
        assert "(s)" not in done.stderr, done.stderr
        assert not re.search(r"(?<![\d,.])1 (queries|hits|threads)\b", done.stderr), done.stderr
    assert "ms/query, 1 thread);" in molsift_run("search", odd_store, "-q", "CCO", "-k", "1").stderr
    # -j is what was asked for, not what ran (one query on a 3-molecule store: one block)
    many = molsift_run("search", odd_store, "-q", "CCO", "-k", "1", "-j", "100").stderr
    assert "ms/query, up to 100 threads);" in many, many


QUERY_VERBS = {
    "search": ["-q", "CCO", "-k", "1"],
    "substructure": ["-q", "CCO"],
    "analogs": ["-q", "CCO", "--dist", "0"],
}


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_a_parquet_suffix_in_capitals_is_parquet(odd_store, tmp_path, verb):
    """`-o hits.PARQUET` passed the check of the suffix (which ignores case) and was filled
    with tab-separated text."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    out = tmp_path / "hits.PARQUET"
    proc = molsift_run(verb, odd_store, *QUERY_VERBS[verb], "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"PAR1"
    assert pq.read_table(out).num_rows >= 1


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_output_dash_is_standard_output(odd_store, tmp_path, verb):
    """`-o -` wrote the hits to a file named `-` (the query file `-` is refused, not read as
    standard input); it is standard output, as `-o ''` is."""
    proc = molsift_run(verb, odd_store, *QUERY_VERBS[verb], "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("query"), proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_an_output_that_is_the_queries_file_is_refused(odd_store, tmp_path, verb):
    """`--queries q.txt -o q.txt`: substructure and analogs emptied the file before reading
    their queries (`c1cc` parsed from a torn line, exit 2, the queries lost); search replaced
    the queries by its hits. Refused before any work, the file kept."""
    queries = tmp_path / "q.txt"
    queries.write_text("c1ccccc1O phenol\nCCO ethanol\n")
    args = [a for a in QUERY_VERBS[verb] if a not in ("-q", "CCO")]
    proc = molsift_run(verb, odd_store, "--queries", queries, *args, "-o", tmp_path / "." / "q.txt")
    assert proc.returncode == 2, proc.stderr
    assert "the output is the --queries file" in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert queries.read_text() == "c1ccccc1O phenol\nCCO ethanol\n"


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_an_output_inside_the_store_is_refused(odd_store, tmp_path, verb):
    """`-o STORE/rejects.tsv` overwrote the store's own file (lookup, and search, substructure
    and analogs alike): the store no longer opened. Refused before any work."""
    import shutil

    store = tmp_path / "s.store"
    shutil.copytree(odd_store, store)
    before = (store / "rejects.tsv").read_bytes()
    proc = molsift_run(verb, store, *QUERY_VERBS[verb], "-o", store / "rejects.tsv")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"is inside the store {store}, which molsift {verb} reads" in proc.stderr
    assert (store / "rejects.tsv").read_bytes() == before
    molsift.open_store(store, verify=True)


@pytest.mark.parametrize("verb", QUERY_VERBS)
def test_parquet_without_pyarrow_is_refused_before_any_search(odd_store, tmp_path, verb):
    """search found the hits first, then said that Parquet needs pyarrow: here a query it cannot
    parse was that query's error, not the missing pyarrow. Refused before any work, as
    substructure and analogs refuse it."""
    import os

    fake = tmp_path / "nopyarrow" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named pyarrow')\n")
    path = [str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    out = tmp_path / "hits.parquet"
    args = ["-q", "not-a-smiles", *QUERY_VERBS[verb][2:]]
    proc = molsift_run(verb, odd_store, *args, "-o", out, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "molsift: error: Parquet output needs pyarrow (pip install pyarrow)\n"
    assert not out.exists()


@pytest.mark.parametrize("verb", [*QUERY_VERBS, "lookup"])
def test_a_csv_query_file_names_its_queries_by_id_col(odd_store, tmp_path, verb):
    """A CSV --queries file with an id column named its queries by line number ("2", "3"):
    the query verbs had no --id-col (nor --smiles-col, --delimiter) for their query file,
    though `query_source` said a CSV id column was read. Given without --queries, refused."""
    queries = tmp_path / "q.csv"
    queries.write_text("name;smi\nethanol;CCO\nphenol;c1ccccc1O\n".replace(";", "\t"))
    args = [a for a in QUERY_VERBS.get(verb, []) if a not in ("-q", "CCO")]
    options = ["--format", "csv", "--smiles-col", "smi", "--id-col", "name", "--delimiter", "tab"]
    proc = molsift_run(verb, odd_store, "--queries", queries, *args, *options)
    assert proc.returncode in (0, 1), proc.stderr  # lookup: 1 when a query is not in the store
    firsts = {line.split("\t")[0] for line in proc.stdout.splitlines()[1:]}
    want = {"ethanol", "phenol"}
    assert firsts and firsts <= want, proc.stdout
    proc = molsift_run(verb, odd_store, "-q", "CCO", *args, "--id-col", "name")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--id-col says how to read the --queries file" in proc.stderr
