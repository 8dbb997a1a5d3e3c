"""Progress bars for long work: a tqdm bar on a terminal, nothing when output is not a terminal
(or when asked to be quiet). One place decides, so every verb behaves the same."""

from __future__ import annotations

import sys


class Progress:
    """A bar counting `unit`s toward an optional total."""

    def __init__(
        self, desc: str, total: int | None = None, unit: str = "mol", enabled: bool | None = None
    ):
        if enabled is None:
            enabled = sys.stderr.isatty()
        self._bar = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=desc,
                unit=unit,
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
            )

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Phase:
    """One step of a long job that counts nothing it could show (a write done in Rust): on a
    terminal (the rule of `Progress`), a line when it starts and one with its time when it ends
    (none when it fails: the error says what happened)."""

    def __init__(self, desc: str, enabled: bool | None = None):
        self.desc = desc
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = 0.0

    def __enter__(self) -> Phase:
        import time

        self.start = time.perf_counter()
        if self.enabled:
            print(f"{self.desc} ...", file=sys.stderr, flush=True)
        return self

    def __exit__(self, kind, *exc) -> None:
        import time

        if self.enabled and kind is None:
            seconds = time.perf_counter() - self.start
            print(f"{self.desc}: done in {seconds:.1f} s", file=sys.stderr, flush=True)


def counter(bar: Progress):
    """A `progress(done)` callback (what Rust calls now and then, from any thread, with the
    count done so far) that moves `bar` forward."""
    seen = [0]

    def progress(done: int) -> None:
        bar.update(max(done - seen[0], 0))
        seen[0] = max(seen[0], done)

    return progress
