"""What protobuf costs the embedded server, per object, against JSON on the same objects.

    .venv/bin/python bench/protobuf_codec.py [--repeat 2000]

Encodes and decodes the recorded Deployment (with status and managedFields), Pod and ConfigMap list of
`tests/golden/k8s/` through `planner.slim.protobuf`, and the same objects through `json`, and prints
microseconds per call, the ratio to JSON and the sizes; also the one-off cost of loading the schema.
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.slim import protobuf
from planner.slim.protobuf.messages import schema

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "k8s"
OBJECTS = {
    "Deployment": "deployment_get_after_controller.json",
    "Pod": "pod_get.json",
    "ConfigMapList (2 items)": "list_configmaps_all_namespaces_limit_2.json",
}


def per_call(call: Any, repeat: int) -> float:
    return timeit.timeit(call, number=repeat) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=2000)
    repeat = parser.parse_args().repeat
    started = time.perf_counter()
    schema()
    print(f"schema load: {(time.perf_counter() - started) * 1000:.0f} ms (once per server, on first use)")
    print(f"{'object':<24} {'encode µs':>10} {'decode µs':>10} {'× json':>12} {'bytes':>12}")
    for label, file in OBJECTS.items():
        obj = json.loads((GOLDEN / file).read_text())["response_body"]
        wire, text = protobuf.encode(obj), json.dumps(obj, separators=(",", ":")).encode()
        encode = per_call(lambda obj=obj: protobuf.encode(obj), repeat)
        decode = per_call(lambda wire=wire: protobuf.decode(wire), repeat)
        json_encode = per_call(lambda obj=obj: json.dumps(obj, separators=(",", ":")).encode(), repeat)
        json_decode = per_call(lambda text=text: json.loads(text), repeat)
        ratios = f"{encode / json_encode:.1f}/{decode / json_decode:.1f}"
        print(f"{label:<24} {encode:>10.0f} {decode:>10.0f} {ratios:>12} {len(wire):>5} / {len(text):<5}")
    print("(× json: protobuf time over json.dumps/json.loads time, encode/decode; bytes: protobuf / JSON)")


if __name__ == "__main__":
    main()
