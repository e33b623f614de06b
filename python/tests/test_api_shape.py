"""The SDK's public surface: documented, typed, and the progress bar shown when asked."""

from __future__ import annotations

import inspect
import io
import sys

import weft
from weft import client as client_mod
from weft import fs as fs_mod


def public_names() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [(n, getattr(weft, n)) for n in weft.__all__]
    for cls in [
        weft.Client,
        client_mod.Transfers,
        client_mod.Pids,
        client_mod.Qos,
        client_mod.Policies,
        client_mod.Admin,
        fs_mod.WeftFileSystem,
        fs_mod.WeftFile,
    ]:
        out.append((cls.__name__, cls))
        for name, member in vars(cls).items():
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                out.append((f"{cls.__name__}.{name}", member))
    return out


def test_every_public_name_has_a_docstring() -> None:
    missing = [name for name, obj in public_names() if not (inspect.getdoc(obj) or "").strip()]
    assert missing == []


def test_the_package_ships_its_types() -> None:
    from importlib import resources

    files = {p.name for p in resources.files("weft").iterdir()}
    assert {"py.typed", "_weft.pyi"} <= files


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_for_long_transfers_unless_turned_off(client, home, tmp_path, monkeypatch) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\1" * (20 << 20))
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    client.put(big, f"{home}/big.bin", progress=True)
    shown = err.getvalue()
    assert "put big.bin" in shown and "100%" in shown and "20.0M" in shown, shown
    err.truncate(0)
    err.seek(0)
    client.get(f"{home}/big.bin", tmp_path / "back.bin", progress=False)
    client.put(big, f"{home}/big2.bin", progress=False)
    assert err.getvalue() == ""
    # Small work shows none even when asked.
    client.put(b"x", f"{home}/small", progress=True)
    assert err.getvalue() == ""
