"""pandas, pyarrow, xarray (netCDF through h5netcdf, and zarr), zarr and dask on weft://
paths, with no weft-specific code: the zone comes from WEFT_URL/WEFT_TOKEN."""

from __future__ import annotations

import dask.array as da
import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr


@pytest.fixture
def url(zone, home, monkeypatch) -> str:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WEFT_URL", zone.url)
    monkeypatch.setenv("WEFT_TOKEN", zone.token)
    fsspec.filesystem("weft").invalidate_cache()
    return "weft://" + home.lstrip("/")


def frame(n: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(42)
    return pd.DataFrame(
        {
            "station": rng.choice(["lrz", "it4i", "cscs"], n),
            "t": rng.normal(280, 5, n),
            "n": np.arange(n),
        }
    )


def test_pandas_csv_and_parquet(url: str, client, home) -> None:
    df = frame()
    df.to_csv(f"{url}/obs.csv", index=False)
    back = pd.read_csv(f"{url}/obs.csv")
    pd.testing.assert_frame_equal(back, df)
    df.to_parquet(f"{url}/obs.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(f"{url}/obs.parquet"), df)
    # Only some columns: pyarrow reads ranges of the file, not all of it.
    cols = pd.read_parquet(f"{url}/obs.parquet", columns=["n"])
    assert cols["n"].tolist() == df["n"].tolist()
    # They are ordinary weft objects.
    assert client.stat(f"{home}/obs.parquet").checksum.startswith("blake3:")
    with fsspec.open(f"{url}/obs.csv", "rt") as f:
        assert f.readline() == "station,t,n\n"


def test_pandas_with_storage_options(zone, home) -> None:
    # No environment: the zone and token as storage_options, as with s3fs.
    options = {"endpoint_url": zone.url, "token": zone.token}
    url = "weft://" + home.lstrip("/")
    df = frame(100)
    df.to_parquet(f"{url}/so.parquet", storage_options=options)
    pd.testing.assert_frame_equal(pd.read_parquet(f"{url}/so.parquet", storage_options=options), df)
    df.to_csv(f"{url}/so.csv", index=False, storage_options=options)
    pd.testing.assert_frame_equal(pd.read_csv(f"{url}/so.csv", storage_options=options), df)


def test_xarray_netcdf_through_h5netcdf(url: str) -> None:
    ds = xr.Dataset(
        {"temperature": (("time", "x"), np.arange(120.0).reshape(12, 10))},
        coords={"time": np.arange(12), "x": np.linspace(0, 1, 10)},
        attrs={"source": "weft test"},
    )
    # HDF5 seeks back while it writes; a file in a zone is written front to back (as on
    # S3), so the file is made in memory and written whole.
    with fsspec.open(f"{url}/t.nc", "wb") as f:
        f.write(ds.to_netcdf(engine="h5netcdf"))
    with fsspec.open(f"{url}/t.nc", "rb") as f:
        back = xr.open_dataset(f, engine="h5netcdf").load()
    xr.testing.assert_identical(back, ds)


def test_zarr_store_through_get_mapper_and_dask(url: str, client, home) -> None:
    values = np.arange(200 * 300, dtype="f8").reshape(200, 300)
    z = zarr.open(fsspec.get_mapper(f"{url}/a.zarr"), mode="w", shape=values.shape, chunks=(50, 100), dtype="f8")
    z[:] = values
    back = zarr.open(fsspec.get_mapper(f"{url}/a.zarr"), mode="r")
    np.testing.assert_array_equal(back[:], values)
    assert back[17, 42] == values[17, 42]
    # 12 chunks, each an object of its own.
    chunks = [n for n in client.find(f"{home}/a.zarr", kind="object") if n.name != "zarr.json"]
    assert len(chunks) == 12

    d = da.from_zarr(fsspec.get_mapper(f"{url}/a.zarr"))
    assert d.chunks == ((50,) * 4, (100,) * 3)
    assert float(d.sum().compute()) == float(values.sum())
    assert float(d[::2, 10:20].mean().compute()) == float(values[::2, 10:20].mean())

    ds = xr.Dataset({"v": (("y", "x"), values)})
    ds.to_zarr(fsspec.get_mapper(f"{url}/ds.zarr"), mode="w", consolidated=False)
    opened = xr.open_zarr(fsspec.get_mapper(f"{url}/ds.zarr"), consolidated=False)
    assert float(opened.v.sum()) == float(values.sum())
