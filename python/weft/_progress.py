"""Progress bars of long operations: tqdm (``tqdm.auto``, so a widget in Jupyter and text in
terminals), shown only for work large enough to be worth watching."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Work below these sizes finishes too soon for a bar to help.
MIN_BYTES = 16 << 20
MIN_FILES = 50


class Bar:
    """A byte-counting bar fed with the running total the native module reports."""

    def __init__(self, desc: str, total: int | None, files: int, enabled: bool) -> None:
        self._bar: Any = None
        self._seen = 0
        big = total is None or total >= MIN_BYTES or files >= MIN_FILES
        if enabled and big:
            from tqdm.auto import tqdm

            # disable=None: no bar when stderr is not a terminal (logs, CI), as the CLI.
            self._bar = tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024, disable=None)

    def update(self, done: int) -> None:
        """Called with the bytes moved so far."""
        if self._bar is not None and done != self._seen:
            self._bar.update(done - self._seen)
            self._seen = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Callable[[int], None]:
        return self.update

    def __exit__(self, *exc: object) -> None:
        self.close()
