"""Kubernetes quantities as the API server reads them: which texts it accepts, and the value it keeps.

The official client's `parse_quantity` computes a quantity's value, but it accepts texts the server
refuses (`1K`, `1e3Mi`, `Infinity`, `1_000`) and computes in Python's default 28-digit context. So a
text is first matched against the grammar of apimachinery's `resource.ParseQuantity` (`_SERVER_FORM`),
then valued by the client in a context wide enough to be exact. `stored_quantity` is what the server
keeps of that value (apimachinery's quantity.go): any non-zero value finer than 1n is rounded away from
zero to a whole number of nano-units, and a binary-suffixed (`Ki`…`Ei`) value above 2^63-1 is clamped to
it. Decimal values are not clamped, but nothing that reads a quantity as an int64 (the scheduler, the
kubelet, quota) can use one above 2^63-1 either: `MAX_QUANTITY` is the bound planner enforces.

It lives in `kube/` because only this package may import `kubernetes`; the plan loader and the
canonical comparison reach it through here.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal, localcontext

MAX_QUANTITY = Decimal(2**63 - 1)
NANO = Decimal("1e-9")
_SERVER_FORM = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_BINARY_SUFFIX = re.compile(r"[KMGTPE]i$")


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity the API server accepts (`500m`, `0.5`, `1Gi`, `1e3`);
    ValueError when the server would refuse the text."""
    if not _SERVER_FORM.fullmatch(text):
        raise ValueError(f"not a quantity: {text}")
    with localcontext(_exact(text)):
        value = _client_parse_quantity()(text)
    if not isinstance(value, Decimal):  # pragma: no cover - the client always returns a Decimal
        raise ValueError(f"not a quantity: {text}")
    return value


def stored_quantity(text: str) -> Decimal:
    """The value the API server keeps for `text`: rounded away from zero to 1n, a binary-suffixed value
    clamped to ±(2^63-1). ValueError when the server would refuse the text."""
    value = parse_quantity(text)
    if _BINARY_SUFFIX.search(text) and abs(value) > MAX_QUANTITY:
        return MAX_QUANTITY.copy_sign(value)
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9:
        with localcontext(_exact(text)):
            return value.quantize(NANO, rounding=ROUND_UP)
    return value


def _exact(text: str) -> Context:
    """A decimal context in which valuing `text` loses nothing: room for every digit it writes plus the
    largest suffix (2^60 has 19 digits), and exponents as large as the text can write."""
    return Context(prec=len(text) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)


@functools.cache
def _client_parse_quantity() -> Callable[[str], Decimal]:
    """The client's `kubernetes/utils/quantity.py`, loaded by itself: `import kubernetes.utils.quantity`
    would first run the package's `__init__`, which imports the whole client (about 0.4 s), and
    `validate` never talks to a cluster. The module needs nothing but `decimal`."""
    found = importlib.util.find_spec("kubernetes")  # finds the package without importing it
    if found is None or not found.submodule_search_locations:  # pragma: no cover - a dependency
        raise ImportError("the kubernetes client is not installed")
    path = f"{found.submodule_search_locations[0]}/utils/quantity.py"
    spec = importlib.util.spec_from_file_location("planner.kube._client_quantity", path)
    if spec is None or spec.loader is None:  # pragma: no cover
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parse: Callable[[str], Decimal] = module.parse_quantity
    return parse
