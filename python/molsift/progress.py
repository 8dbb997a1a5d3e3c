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
