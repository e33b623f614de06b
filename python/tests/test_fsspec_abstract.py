"""fsspec's own abstract test suite (copy, get, put, open, pipe) against a real zone."""

from __future__ import annotations

import itertools
import os

import pytest
from fsspec.tests.abstract import AbstractFixtures
from fsspec.tests.abstract.copy import AbstractCopyTests
from fsspec.tests.abstract.get import AbstractGetTests
from fsspec.tests.abstract.open import AbstractOpenTests
from fsspec.tests.abstract.pipe import AbstractPipeTests
from fsspec.tests.abstract.put import AbstractPutTests

from weft.fs import WeftFileSystem

_n = itertools.count()


class WeftFixtures(AbstractFixtures):
    @pytest.fixture
    def fs(self, zone):  # type: ignore[no-untyped-def]
        fs = WeftFileSystem(zone.url, zone.token, skip_instance_cache=True)
        return fs

    @pytest.fixture
    def fs_path(self, fs):  # type: ignore[no-untyped-def]
        path = f"/t/home/admin/abstract-{os.getpid()}-{next(_n)}"
        fs.mkdir(path)
        yield path
        fs.rm(path, recursive=True)

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        return True


class TestWeftCopy(AbstractCopyTests, WeftFixtures):
    pass


class TestWeftGet(AbstractGetTests, WeftFixtures):
    pass


class TestWeftPut(AbstractPutTests, WeftFixtures):
    pass


class TestWeftOpen(AbstractOpenTests, WeftFixtures):
    pass


class TestWeftPipe(AbstractPipeTests, WeftFixtures):
    pass
