"""Kubernetes quantities as the API server reads them: which texts it accepts, and the value it keeps.

The grammar and the arithmetic are `planner.quantities`', which the embedded cluster's server uses
too. What is planner's own: a text must match the form `resource.ParseQuantity` reads to the letter
(`_SERVER_FORM`: no spaces around it, which the server trims from JSON, and no `1K`, `1e3Mi`,
`Infinity` or `1_000`, which the official client's parser would take), and its value is read exactly
as written, so a plan's absurd exponent reads as the huge number it writes. `stored_quantity` is what
the server keeps of that value (apimachinery's quantity.go): any non-zero value finer than 1n is rounded
away from zero to a whole number of nano-units, and a binary-suffixed (`Ki`…`Ei`) value above 2^63-1 is
clamped to it. Decimal values are not clamped, but nothing that reads a quantity as an int64 (the
scheduler, the kubelet, quota) can use one above 2^63-1 either: `MAX_QUANTITY` is the bound planner
enforces.
"""

from __future__ import annotations

import re
from decimal import Decimal

from planner import quantities

MAX_QUANTITY = quantities.MAX_ALLOWED
_SERVER_FORM = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity the API server accepts (`500m`, `0.5`, `1Gi`, `1e3`);
    ValueError when the server would refuse the text."""
    return _exact(text)[0]


def stored_quantity(text: str) -> Decimal:
    """The value the API server keeps for `text`: rounded away from zero to 1n, a binary-suffixed value
    clamped to ±(2^63-1). ValueError when the server would refuse the text."""
    return quantities.kept(*_exact(text))


def _exact(text: str) -> tuple[Decimal, str]:
    if not _SERVER_FORM.fullmatch(text):
        raise ValueError(f"not a quantity: {text}")
    return quantities.exact(text)
