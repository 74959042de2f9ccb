"""Whatever bytes a plan file holds, loading it returns plans or raises PlanError: nothing else escapes.

Hypothesis feeds the loader arbitrary bytes, YAML built from the pieces hostile files use (brackets,
anchors and aliases, merge keys, tags, directives, control characters, huge numbers), and example plans
with such pieces spliced in. The deadline is a guard against hangs, not a timing assertion: these inputs
are at most a few kilobytes, which the loader reads in milliseconds (bench/plan_validate.py measures the
time per size); an alias bomb without the limits ran for minutes.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import PlanError
from planner.plan import LoadResult, load_plans
from tests.paths import PLANS

PIECES = [
    "[", "]", "{", "}", ",", ": ", "- ", "? ", "\n", "  ", "\t", "#", "'", '"', "|\n", ">-\n",
    "&a ", "*a", "&b ", "*b", "<<: ", "<<: *a", "---\n", "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n",
    "!!int ", "!!float ", "!!binary ", "!!timestamp ", "!!str ", "!!map ", "!!seq ", "!!set ", "!!omap ",
    "!local ", "!<tag:yaml.org,2002:int> ", "!!python/object:os.system ",
    "null", "~", "yes", "0x1F", "0o17", "0b101", "1_000", ".inf", "-.nan", "1e400", "9" * 4400,
    "2001-12-14t21:59:43.10-05:00", "2020-99-99", "\x00", "\x1b", "\ufeff", "\u2028", "\r", "é", "\\u0000",
    "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\n", "workloads:\n", "  - name: w\n",
    "    image: i\n", "    cpu: ", "    memory: ", "    env: ", "    labels: ",
]  # fmt: skip
EXAMPLES = [path.read_text() for path in sorted(PLANS.glob("*.yaml"))]

fragments = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=80).map("".join)


@st.composite
def spliced_examples(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(EXAMPLES))
    at = draw(st.integers(min_value=0, max_value=len(text)))
    cut = draw(st.integers(min_value=0, max_value=40))
    return text[:at] + draw(fragments) + text[at + cut :]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


plan_bytes = st.one_of(st.binary(max_size=2000), fragments.map(_utf8), spliced_examples().map(_utf8))


@settings(deadline=timedelta(seconds=10), suppress_health_check=[HealthCheck.too_slow])
@given(data=plan_bytes)
def test_any_bytes_load_to_plans_or_a_plan_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="planner-property-") as directory:
        path = Path(directory) / "plan.yaml"
        path.write_bytes(data)
        try:
            result = load_plans([path], environ={})
        except PlanError as error:
            assert error.diagnostics, "a PlanError carries at least one diagnostic"
            assert all(d.line >= 1 and d.column >= 1 for d in error.diagnostics)
        else:
            assert isinstance(result, LoadResult)
