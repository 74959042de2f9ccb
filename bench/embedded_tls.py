"""What HTTPS and the admin token cost the embedded cluster: start to ready, 300 LISTs of namespaces
through the official client (one kept-alive TLS connection), and 5 `kubectl get ns` (a handshake each),
against a plain-HTTP server without a token (`running_cluster(insecure=True)`), the two alternating so
that the machine's load falls on both alike; and the certificates' generation alone.

    .venv/bin/python bench/embedded_tls.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kubernetes import client, config

from planner.slim.certs import ensure_certificates
from planner.slim.cluster import running_cluster

LISTS = 300
KUBECTL_RUNS = 5


def one_round(insecure: bool) -> tuple[float, float, float]:
    """(start to ready, the LISTs, the kubectl runs), in seconds."""
    started = time.perf_counter()
    with running_cluster(insecure=insecure) as handle:
        ready = time.perf_counter() - started
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(handle.kubeconfig)))
        listed = time.perf_counter()
        for _ in range(LISTS):
            api.list_namespace()
        lists = time.perf_counter() - listed
        ran = time.perf_counter()
        with tempfile.TemporaryDirectory() as cache:
            command = ["kubectl", f"--kubeconfig={handle.kubeconfig}", f"--cache-dir={cache}", "get", "ns"]
            for _ in range(KUBECTL_RUNS):
                subprocess.run(command, check=True, capture_output=True)
        return ready, lists, time.perf_counter() - ran


def certificate_seconds(times: int = 20) -> float:
    taken = []
    for _ in range(times):
        with tempfile.TemporaryDirectory() as directory:
            started = time.perf_counter()
            ensure_certificates(Path(directory))
            taken.append(time.perf_counter() - started)
    return statistics.median(taken)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for insecure in (True, False):
            rows[insecure].append(one_round(insecure))
    for insecure, measured in rows.items():
        ready, lists, kubectl = (statistics.median(column) for column in zip(*measured, strict=True))
        name = "plain HTTP, no token" if insecure else "HTTPS + admin token"
        print(
            f"{name:<22} start→ready {ready:.2f} s | {LISTS} LISTs {lists:.2f} s | "
            f"{KUBECTL_RUNS} kubectl get ns {kubectl:.2f} s  (medians of {len(measured)})"
        )
    print(f"certificates (CA + server, ECDSA P-256): {1000 * certificate_seconds():.1f} ms")


if __name__ == "__main__":
    main()
