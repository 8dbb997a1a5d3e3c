"""The `vina` scorer: real docking with AutoDock Vina 1.2.7 and Meeko 0.8.0. Owns the box file
parser, the per-ligand stages (RDKit ETKDG + MMFF embed, Meeko PDBQT, Vina dock, best pose as
SDF or PDBQT), the receptor maps (built once per worker in `setup`) and the per-ligand timeout.

Timeout: Vina's `dock()` is C++ and holds the interpreter, so no Python signal can stop it. Each
ligand therefore runs in a child forked from the worker after `setup()`: the child inherits the
receptor maps (copy-on-write, nothing is recomputed), embeds, prepares and docks, and sends the
result back through a pipe; on timeout the worker kills it with SIGKILL. `--vina-timeout 0`
runs everything in the worker itself (no fork, no timeout)."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import inspect
import io
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..parallel.lifetime import die_with_parent
from .base import Reject, Scorer, ScorerError

BOX_KEYS = ("center_x", "center_y", "center_z", "size_x", "size_y", "size_z")
FINAL = ("ok", "reject", "error")  # the child's last message; "stage" messages come before


# ---------------------------------------------------------------------------------------------
# The box


@dataclass(frozen=True)
class Box:
    """The docking box in Angstrom: its centre and its edge lengths."""

    center: tuple[float, float, float]
    size: tuple[float, float, float]


def read_box(path: str) -> Box:
    """Reads a box in Vina's config format (`center_x = 15.19` ... `size_z = 20`, one per line;
    `#` comments and blank lines allowed). Errors name the file and the line."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"cannot read the Vina box file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:  # was Python's codec message, naming no file
        raise ValueError(
            f"{path}: not a Vina box file: byte {exc.start} is not UTF-8 text"
        ) from None
    values: dict[str, float] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip()
        where = f"{path}:{lineno}"
        if not eq:
            raise ValueError(
                f"{where}: expected 'key = value' (e.g. center_x = 15.19), got {raw.strip()!r}"
            )
        if key not in BOX_KEYS:
            raise ValueError(
                f"{where}: unknown key {key!r}: a box file holds only "
                f"{', '.join(BOX_KEYS)} (other Vina settings are --vina-* options)"
            )
        if key in values:
            raise ValueError(f"{where}: {key} is given twice")
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"{where}: {key} is not a number: {value!r}") from None
    missing = [k for k in BOX_KEYS if k not in values]
    if missing:
        raise ValueError(f"{path}: the box file lacks {', '.join(missing)}")
    return make_box([values[k] for k in BOX_KEYS[:3]], [values[k] for k in BOX_KEYS[3:]], path)


def parse_triple(text: str, option: str) -> list[float]:
    """`X,Y,Z` (commas or spaces) as three floats, for --vina-center and --vina-size."""
    parts = text.replace(",", " ").split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 3:
        raise ValueError(f"{option} wants three numbers X,Y,Z, got {text!r}")
    return values


def make_box(center: Sequence[float], size: Sequence[float], where: str) -> Box:
    if any(not s > 0 for s in size):
        raise ValueError(f"{where}: box sizes must be positive, got {tuple(size)}")
    return Box(tuple(float(c) for c in center), tuple(float(s) for s in size))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# One ligand


@dataclass
class Docked:
    """What one ligand gives: the best affinity, the poses Vina returned, the best pose as text,
    and the seconds spent in each stage (pose_s: writing the best pose, part of dock_s)."""

    score: float
    n_poses: int
    pose: str
    embed_s: float
    prep_s: float
    dock_s: float
    pose_s: float


class StageReject(Reject):
    """A Reject that remembers the stage it happened in (embed, prepare, dock)."""

    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage = stage

    def __reduce__(self):  # picklable, should a pipeline send it across processes
        return (StageReject, (self.stage, str(self)))


def canonical_order(mol: Any) -> Any:
    """The molecule rebuilt from its canonical SMILES, so that its atoms and bonds come in one
    order whatever the input: the embedding (and so the docking) then depends on the molecule
    only, not on how the input wrote it (an SDF and a SMILES of the same ligand used to dock to
    different scores). Renumbering atoms alone is not enough: ETKDG also follows the bond order."""
    from rdkit import Chem

    rebuilt = Chem.MolFromSmiles(Chem.MolToSmiles(Chem.RemoveHs(mol)))
    return rebuilt if rebuilt is not None else mol


def embed(mol: Any, seed: int) -> Any:
    """The molecule with hydrogens and one ETKDGv3 conformer, MMFF-optimized when MMFF has
    parameters for it. Retries once with random starting coordinates (RDKit's advice for molecules
    where ETKDG's eigenvalue start fails, e.g. long flexible chains)."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed = seed
    try:
        with rdBase.BlockLogs():  # an invariant violation also prints a long C++ stack trace
            conf = AllChem.EmbedMolecule(mol, params)
            if conf < 0:
                params.useRandomCoords = True
                conf = AllChem.EmbedMolecule(mol, params)
    except Exception as exc:  # RDKit raises on some metal complexes ("bad lower bound")
        raise StageReject("embed", f"embedding failed: RDKit: {_first_line(exc, 2)}") from None
    if conf < 0:
        raise StageReject(
            "embed",
            "embedding failed: ETKDG found no 3D conformer (also not from random coordinates)",
        )
    if AllChem.MMFFHasAllMoleculeParams(mol):
        AllChem.MMFFOptimizeMolecule(mol)
    return mol


def _first_line(exc: BaseException, n: int = 1) -> str:
    """The first `n` non-blank lines of an error message (C++ messages run on for pages)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return " ".join(lines[:n]) if lines else type(exc).__name__


class VinaScorer(Scorer):
    """Docks each molecule into a receptor with AutoDock Vina; the best affinity (kcal/mol) is
    `vina_score`, the best pose goes to the pose file."""

    name = "vina"
    columns = ("vina_score", "n_poses", "embed_s", "prep_s", "dock_s")
    has_poses = True

    def __init__(
        self,
        receptor: str,
        box: Box,
        exhaustiveness: int = 8,
        n_poses: int = 9,
        seed: int = 42,
        timeout: float = 300.0,
        cpu: int = 1,
        pose_format: str = "sdf",
    ):
        if not Path(receptor).is_file():
            why = "a directory" if Path(receptor).is_dir() else "no such file"
            raise ValueError(f"Vina receptor {receptor}: {why} (give a receptor PDBQT)")
        if exhaustiveness < 1 or n_poses < 1 or cpu < 0 or not timeout >= 0:  # NaN too
            raise ValueError("vina: exhaustiveness and n_poses must be >= 1, cpu and timeout >= 0")
        if pose_format not in ("sdf", "pdbqt"):
            raise ValueError(f"vina: pose format must be sdf or pdbqt, got {pose_format!r}")
        if timeout > 0 and not hasattr(os, "fork"):
            raise ValueError("vina: --vina-timeout needs fork(); use --vina-timeout 0 here")
        self.receptor = str(receptor)
        self.box = box
        self.exhaustiveness = exhaustiveness
        self.n_poses = n_poses
        self.seed = seed
        self.timeout = timeout
        self.cpu = cpu
        self.pose_format = pose_format
        self._vina: Any = None
        self._exiting: list[int] = []  # children that sent their result, not yet reaped
        self._stats = self._zero_stats()

    def options(self) -> dict:
        """Its options and the receptor's bytes (SHA-256): the same path holding another
        receptor docks differently."""
        import hashlib

        found = super().options()
        with open(self.receptor, "rb") as fh:
            digest = hashlib.sha256()
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        found["receptor_sha256"] = digest.hexdigest()
        return found

    # --- options ------------------------------------------------------------------------------

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        import importlib.util

        if importlib.util.find_spec("vina") is None:  # found, not imported: the CLI starts fast
            raise ImportError("vina is not installed")  # the CLI then leaves these options out

        g = parser.add_argument_group("vina scorer (AutoDock Vina 1.2 + Meeko)")
        defaults = {name: p.default for name, p in inspect.signature(cls).parameters.items()}
        g.add_argument("--vina-receptor", metavar="PDBQT", help="receptor prepared for Vina")
        g.add_argument(
            "--vina-box",
            metavar="FILE",
            help="box in Vina's config format (center_x = ..., size_x = ...)",
        )
        g.add_argument(
            "--vina-center", metavar="X,Y,Z", help="box centre (Angstrom), with --vina-size"
        )
        g.add_argument("--vina-size", metavar="X,Y,Z", help="box edge lengths (Angstrom)")
        g.add_argument(
            "--vina-exhaustiveness",
            type=int,
            default=defaults["exhaustiveness"],
            metavar="N",
            help=f"Monte Carlo runs per ligand (default {defaults['exhaustiveness']})",
        )
        g.add_argument(
            "--vina-poses",
            type=int,
            default=defaults["n_poses"],
            metavar="N",
            help=f"poses Vina keeps per ligand (default {defaults['n_poses']}; the best one is "
            "written)",
        )
        g.add_argument(
            "--vina-seed",
            type=int,
            default=defaults["seed"],
            help=f"seed for embedding and docking (default {defaults['seed']}: runs are "
            "reproducible)",
        )
        g.add_argument(
            "--vina-timeout",
            type=float,
            default=defaults["timeout"],
            metavar="SECONDS",
            help=f"reject a ligand that takes longer (default {defaults['timeout']:g}; 0: no "
            "limit, no fork)",
        )
        g.add_argument(
            "--vina-cpu",
            type=int,
            default=defaults["cpu"],
            metavar="N",
            help=f"Vina threads per worker (default {defaults['cpu']}: parallelism comes from "
            "workers)",
        )
        g.add_argument(
            "--vina-pose-format",
            choices=("sdf", "pdbqt"),
            default=defaults["pose_format"],
            help=f"format of the pose file (default {defaults['pose_format']})",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> VinaScorer:
        if not args.vina_receptor:
            raise ValueError("the vina scorer needs --vina-receptor PDBQT")
        if args.vina_box and (args.vina_center or args.vina_size):
            raise ValueError("give either --vina-box or --vina-center with --vina-size, not both")
        if args.vina_box:
            box = read_box(args.vina_box)
        elif args.vina_center and args.vina_size:
            box = make_box(
                parse_triple(args.vina_center, "--vina-center"),
                parse_triple(args.vina_size, "--vina-size"),
                "--vina-size",
            )
        else:
            raise ValueError(
                "the vina scorer needs a box: --vina-box FILE, or --vina-center "
                "X,Y,Z with --vina-size X,Y,Z"
            )
        scorer = cls(
            args.vina_receptor,
            box,
            exhaustiveness=args.vina_exhaustiveness,
            n_poses=args.vina_poses,
            seed=args.vina_seed,
            timeout=args.vina_timeout,
            cpu=args.vina_cpu,
            pose_format=args.vina_pose_format,
        )
        scorer.check_receptor()
        return scorer

    def check_receptor(self) -> None:
        """Reads the receptor once with Vina (a tenth of a second, no maps), so that one Vina
        cannot read is refused before the run: it failed every worker, after the run had
        started and left its files."""
        from vina import Vina

        self._set_receptor(Vina(sf_name="vina", cpu=1, seed=self.seed, verbosity=0))

    def _set_receptor(self, v: Any) -> None:
        try:
            v.set_receptor(self.receptor)
        except Exception as exc:
            raise ScorerError(
                f"Vina cannot read the receptor {self.receptor}: {_first_line(exc)}"
            ) from None

    # --- per worker ---------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_vina"] = None  # a worker builds its own maps in setup()
        state["_exiting"] = []
        state["_stats"] = self._zero_stats()
        return state

    def setup(self) -> None:
        """Reads the receptor and computes its grid maps: once per worker."""
        # import now what each ligand needs, so forked children do not import it again
        import meeko  # noqa: F401
        from rdkit.Chem import AllChem  # noqa: F401
        from vina import Vina

        t0 = time.perf_counter()
        v = Vina(sf_name="vina", cpu=self.cpu, seed=self.seed, verbosity=0)
        self._set_receptor(v)
        v.compute_vina_maps(center=list(self.box.center), box_size=list(self.box.size))
        self._vina = v
        self._stats["vina_maps_built"] += 1
        self._stats["vina_maps_s"] += time.perf_counter() - t0

    def close(self) -> None:
        self._reap_finished(block=True)
        self._vina = None

    def _reap_finished(self, block: bool) -> None:
        """Collects children that sent their result and were left to exit on their own."""
        waiting = []
        for pid in self._exiting:
            try:
                done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                continue
            if not done:
                waiting.append(pid)
        self._exiting = waiting

    @staticmethod
    def _zero_stats() -> dict[str, Any]:
        return {
            "vina_maps_built": 0,
            "vina_maps_s": 0.0,
            "vina_ligands": 0,
            "vina_docked": 0,
            "vina_timeouts": 0,
            "vina_rejects_embed": 0,
            "vina_rejects_prepare": 0,
            "vina_rejects_dock": 0,
            "vina_embed_s": 0.0,
            "vina_prep_s": 0.0,
            "vina_dock_s": 0.0,
            "vina_pose_s": 0.0,
            "vina_fork_s": 0.0,
        }

    def stats(self) -> dict[str, Any]:
        """Maps built (1 per worker), ligands docked and rejected by stage, seconds per stage, and
        vina_fork_s: time per ligand outside the stages when docking in a child (fork, pipe)."""
        return dict(self._stats)

    # --- per ligand ---------------------------------------------------------------------------

    def score(self, mol: Any) -> tuple[list[Any], str]:
        if self._vina is None:
            self.setup()
        self._stats["vina_ligands"] += 1
        t0 = time.perf_counter()
        try:
            if self.timeout > 0:
                docked = self._dock_in_child(mol)
            else:
                docked = self.dock(mol)
        except StageReject as exc:
            self._stats[f"vina_rejects_{exc.stage}"] += 1
            raise
        wall = time.perf_counter() - t0
        s = self._stats
        s["vina_docked"] += 1
        s["vina_embed_s"] += docked.embed_s
        s["vina_prep_s"] += docked.prep_s
        s["vina_dock_s"] += docked.dock_s
        s["vina_pose_s"] += docked.pose_s
        if self.timeout > 0:
            s["vina_fork_s"] += max(0.0, wall - docked.embed_s - docked.prep_s - docked.dock_s)
        values = [docked.score, docked.n_poses, docked.embed_s, docked.prep_s, docked.dock_s]
        return values, docked.pose

    def dock(self, mol: Any, progress: Callable[[str], None] | None = None) -> Docked:
        """Embeds, prepares and docks one molecule in this process (maps from `setup`)."""
        from rdkit import Chem

        def stage(name: str) -> None:
            if progress is not None:
                progress(name)

        stage("embed")
        n_frags = len(Chem.GetMolFrags(mol))
        if n_frags > 1:
            raise StageReject(
                "embed",
                f"{n_frags} fragments (salt or mixture): Vina docks one "
                "molecule; screen with --standardize to keep the largest fragment",
            )
        t0 = time.perf_counter()
        molh = embed(canonical_order(mol), self.seed)
        t1 = time.perf_counter()
        stage("prepare")
        pdbqt = self._prepare(molh)
        try:
            self._vina.set_ligand_from_string(pdbqt)
        except Exception as exc:
            raise StageReject("prepare", f"Vina rejected the ligand: {_first_line(exc)}") from None
        t2 = time.perf_counter()
        stage("dock")
        try:
            self._vina.dock(exhaustiveness=self.exhaustiveness, n_poses=self.n_poses)
            energies = self._vina.energies(n_poses=self.n_poses)
            best = self._vina.poses(n_poses=1)
        except Exception as exc:
            raise StageReject("dock", f"docking failed: {_first_line(exc)}") from None
        if len(energies) == 0:
            raise StageReject("dock", "docking found no pose")
        t3 = time.perf_counter()
        pose = (
            best
            if self.pose_format == "pdbqt"
            else self._pose_sdf(best, mol, float(energies[0][0]))
        )
        t4 = time.perf_counter()
        return Docked(
            score=float(energies[0][0]),
            n_poses=len(energies),
            pose=pose,
            embed_s=t1 - t0,
            prep_s=t2 - t1,
            dock_s=t4 - t2,
            pose_s=t4 - t3,
        )

    @staticmethod
    def _prepare(molh: Any) -> str:
        """Meeko: atom types, charges, rotatable bonds -> ligand PDBQT text."""
        from meeko import MoleculePreparation, PDBQTWriterLegacy

        try:
            setups = MoleculePreparation().prepare(molh)
            text, ok, err = PDBQTWriterLegacy.write_string(setups[0])
        except Exception as exc:
            raise StageReject(
                "prepare", f"Meeko cannot prepare the molecule: {_first_line(exc)}"
            ) from None
        if not ok:
            raise StageReject(
                "prepare", f"Meeko cannot write a PDBQT: {_first_line(Exception(err))}"
            )
        return text

    @staticmethod
    def _pose_sdf(pdbqt: str, mol: Any, score: float) -> str:
        """The best pose as one SDF record (all hydrogens, bond orders from the input)."""
        from meeko import PDBQTMolecule, RDKitMolCreate
        from rdkit import Chem

        try:
            posed = RDKitMolCreate.from_pdbqt_mol(PDBQTMolecule(pdbqt, skip_typing=True))[0]
        except Exception as exc:
            raise StageReject(
                "dock", f"cannot turn the pose into SDF: {_first_line(exc)}"
            ) from None
        if posed is None:
            raise StageReject("dock", "cannot turn the pose into SDF (Meeko returned no molecule)")
        posed.ClearProp("meeko")
        if mol.HasProp("_Name"):
            posed.SetProp("_Name", mol.GetProp("_Name"))
        posed.SetProp("vina_score", f"{score:.3f}")
        out = io.StringIO()
        writer = Chem.SDWriter(out)
        writer.write(posed)
        writer.close()
        return out.getvalue()

    # --- the child ----------------------------------------------------------------------------

    def _dock_in_child(self, mol: Any) -> Docked:
        """Runs `dock` in a child forked from this worker (it inherits the maps), killed after
        `timeout` seconds. The child reports each stage it enters, so a timeout names the stage."""
        self._reap_finished(block=False)
        read_fd, write_fd = os.pipe()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(lambda progress: self.dock(mol, progress), write_fd, worker)
        os.close(write_fd)
        try:
            messages, timed_out = _read_messages(read_fd, time.monotonic() + self.timeout)
        finally:
            os.close(read_fd)
        last = messages[-1] if messages else ("stage", "embed")
        status = 0
        if last[0] in FINAL and not timed_out:
            self._exiting.append(pid)  # reaped later: its exit overlaps the next ligand
        else:
            status = _reap(pid, kill=True)
        if timed_out:
            self._stats["vina_timeouts"] += 1
            stage = last[1] if last[0] == "stage" else "dock"
            raise StageReject(stage, f"docking timed out after {self.timeout:g} s (in {stage})")
        if last[0] == "ok":
            return last[1]
        if last[0] == "reject":
            raise StageReject(last[1], last[2])
        if last[0] == "error":
            raise StageReject(last[1], f"docking failed in {last[1]}: {last[2]}")
        raise StageReject(last[1], f"the docking process died in {last[1]} ({_describe(status)})")


# ---------------------------------------------------------------------------------------------
# Child process plumbing: length-prefixed pickles over a pipe


def _child(work: Callable[[Callable[[str], None]], Docked], fd: int, worker: int) -> None:
    """Body of the forked child of `worker`: do the work, send stage markers and the outcome,
    exit without running the parent's cleanup (atexit handlers, buffered files)."""
    code = 0
    try:
        die_with_parent(worker)
        faulthandler.disable()  # a crash here becomes a reject; no traceback dump on stderr
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        current = ["embed"]

        def progress(stage: str) -> None:
            current[0] = stage
            _send(fd, ("stage", stage))

        try:
            _send(fd, ("ok", work(progress)))
        except StageReject as exc:
            _send(fd, ("reject", exc.stage, str(exc)))
        except Exception as exc:
            _send(fd, ("error", current[0], f"{type(exc).__name__}: {_first_line(exc)}"))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _send(fd: int, message: tuple) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_messages(fd: int, deadline: float) -> tuple[list[tuple], bool]:
    """The child's messages up to its final one (or until it closed the pipe), and whether the
    deadline passed first."""
    buf = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return _unpack(buf), True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return _unpack(buf), False
        buf += chunk
        messages = _unpack(buf)
        if messages and messages[-1][0] in FINAL:
            return messages, False


def _unpack(buf: bytes) -> list[tuple]:
    out, at = [], 0
    while at + 8 <= len(buf):
        (n,) = struct.unpack_from("<Q", buf, at)
        if at + 8 + n > len(buf):
            break  # cut short by a kill or a crash
        out.append(pickle.loads(bytes(buf[at + 8 : at + 8 + n])))
        at += 8 + n
    return out


def _reap(pid: int, kill: bool) -> int:
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"
