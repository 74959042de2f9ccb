"""Where the repository's files are, for tests in any folder."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "k8s"
PLANS = REPO / "plans"
GOLDEN_PROTOBUF = REPO / "tests" / "golden" / "protobuf"
