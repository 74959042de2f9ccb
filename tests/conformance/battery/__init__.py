"""A battery of everyday kubectl commands against the embedded cluster, with their expected results.

Each `Step` (`shapes.py`) is one real kubectl invocation with its expected exit code and the shape of
its output: stdout and stderr are normalised — generated name suffixes, ages, IPs and timestamps
replaced, colours dropped, runs of spaces collapsed — and compared with hand-written expectations (the
whole output, or patterns). `steps.py` is the battery, in the order it runs (against one simulated
cluster, in the namespace `battery`); `runner.py` runs it, skipping with the reason each step that needs
a kind the server does not serve (RBAC, TokenRequest, HPA, the default prune list's kinds).

`tests/conformance/test_battery.py` runs it for kubectl 1.27, 1.31 and 1.33; it also runs on its own:

    .venv/bin/python -m tests.conformance.battery --kubectl 1.33
"""

from tests.conformance.battery.runner import kubectl_path, run
from tests.conformance.battery.shapes import Result, Step
from tests.conformance.battery.steps import steps

__all__ = ["Result", "Step", "kubectl_path", "run", "steps"]
