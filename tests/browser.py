"""A real browser for the tests that check what a person would see: headless Chromium (Debian's
`chromium`) and Mermaid's own renderer (`mermaid.min.js` from the npm package, fetched by
`make .cache/mermaid.min.js`).

Both are installed by `.ci/run`; on a machine without them the tests that need them skip, saying what
is missing, except under CI (CI=true), where a missing browser is a failure rather than a silent skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO

MERMAID = REPO / ".cache" / "mermaid.min.js"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
)
RESULT = re.compile(r'<pre id="result">(.*?)</pre>', re.S)


def _require(thing: Path | None, what: str) -> Path:
    if thing is not None and thing.exists():
        return thing
    message = f"{what} is not installed (.ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def chromium() -> Path:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return _require(Path(found) if found else None, "headless Chromium")


def mermaid_script() -> Path:
    return _require(MERMAID, f"Mermaid's renderer ({MERMAID.relative_to(REPO)})")


def run_chromium(*args: str, timeout: float = 120) -> str:
    """Run headless Chromium with a throwaway profile; its standard output."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [str(chromium()), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    return done.stdout


def dump_dom(url: str, *, extra: tuple[str, ...] = ()) -> str:
    """The page's DOM after its scripts ran (Chromium's --dump-dom)."""
    return run_chromium(*extra, "--virtual-time-budget=20000", "--dump-dom", url)


_RENDER_PAGE = """<!doctype html><html><body><pre id="result">pending</pre>
<script src="{script}"></script>
<script>
const charts = {charts};
mermaid.initialize({{startOnLoad: false, maxTextSize: 100000, maxEdges: 5000}});
async function renderAll() {{
  const results = [];
  for (const [index, text] of charts.entries()) {{
    try {{
      const {{svg}} = await mermaid.render("chart" + index, text);
      const drawn = document.createElement("div");  // HTML parsing: labels hold HTML such as <br>
      drawn.innerHTML = svg;
      results.push({{ok: true, nodes: drawn.querySelectorAll("g.node").length,
                     edges: drawn.querySelectorAll("path.flowchart-link").length}});
    }} catch (error) {{
      results.push({{ok: false, error: String(error)}});
    }}
  }}
  document.getElementById("result").textContent = JSON.stringify(results);
}}
renderAll();
</script></body></html>
"""


def render_mermaid(charts: list[str]) -> list[dict[str, Any]]:
    """Render each chart with Mermaid's own renderer in Chromium: per chart `ok`, and the `nodes` and
    `edges` drawn in its SVG (or the renderer's `error`)."""
    script = mermaid_script()
    with tempfile.TemporaryDirectory(prefix="mermaid-") as directory:
        page = Path(directory) / "render.html"
        page.write_text(_RENDER_PAGE.format(script=script.as_uri(), charts=json.dumps(charts)))
        dom = dump_dom(page.as_uri())
    found = RESULT.search(dom)
    assert found is not None, f"the render page did not finish: {dom[-2000:]}"
    results: list[dict[str, Any]] = json.loads(unescape(found.group(1)))
    return results
