"""weft for Python: a client of a weft zone, and ``weft://`` for fsspec.

>>> import weft
>>> c = weft.Client()                      # WEFT_URL/WEFT_TOKEN, or what `weft login` saved
>>> c.put("results.csv", "results.csv")    # doctest: +SKIP
>>> import pandas as pd
>>> pd.read_csv("weft://lrz/home/alice/results.csv")   # doctest: +SKIP

Bytes move through weft's Rust data path (parallel pieces, bundles of small files,
BLAKE3 verification, retries) with the GIL released; Ctrl-C cancels a transfer cleanly.
Every failure is a :class:`weft.Error` named after the zone's stable code.
"""

from .client import FINAL_STATES, Client, Moved, Node
from .errors import *  # noqa: F403
from .errors import BY_CODE, Error, from_native

__all__ = ["Client", "Node", "Moved", "FINAL_STATES", "Error", "BY_CODE", "from_native"] + [
    cls.__name__ for cls in BY_CODE.values() if cls is not Error
]
__version__ = "0.1.0"
