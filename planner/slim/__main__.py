"""`python -m planner.slim serve …`: the process `planner cluster up` and the test fixtures start."""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

from planner.slim.certs import ensure_certificates
from planner.slim.reconcilers import FULL_RESYNC_SECONDS
from planner.slim.server import TOKEN_ENV, ServerOptions, serve_forever
from planner.slim.store import DEFAULT_EVENT_CAPACITY


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m planner.slim", description="planner's embedded API server"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve in the foreground on 127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--data", type=Path, default=None, help="state directory (SQLite file state.db)")
    serve.add_argument("--memory", action="store_true", help="keep state in memory only")
    serve.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"the admin's bearer token, required of every client but the anonymous user's public "
        f"paths; default: ${TOKEN_ENV}",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve without a token: anyone who can reach the port reads every Secret and sets the "
        "faults (for benchmarks that compare against plain HTTP only)",
    )
    serve.add_argument(
        "--rbac",
        action="store_true",
        help="authorize requests by RBAC: ServiceAccount tokens, the admin token (system:masters)",
    )
    serve.add_argument("--time-scale", type=float, default=1.0, help="multiplies simulated delays")
    serve.add_argument(
        "--pause",
        action="append",
        default=[],
        choices=("controllers", "nodeagent"),
        help="start with this component paused (resume through POST /slim/pause)",
    )
    serve.add_argument("--faults", default=None, help="initial fault settings as JSON (see /slim/faults)")
    serve.add_argument(
        "--no-simulation",
        action="store_true",
        help="serve the API only: no controllers, node agent, faults or /metrics",
    )
    serve.add_argument(
        "--watch-cache-size",
        type=int,
        default=DEFAULT_EVENT_CAPACITY,
        help="watch events kept for resuming; older resourceVersions get 410 Expired",
    )
    serve.add_argument(
        "--resync-seconds",
        type=float,
        default=FULL_RESYNC_SECONDS,
        help="how often the controllers and node agent look at every object again (the self-healing "
        "level-based resync; events and timers drive them in between)",
    )
    serve.add_argument(
        "--port-file", type=Path, default=None, help="write the bound port here once listening"
    )
    serve.add_argument(
        "--tls-dir",
        type=Path,
        default=None,
        help="serve HTTPS with the certificates in this directory (ca.crt, server.crt, server.key; "
        "made when missing)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.token and not args.insecure_no_auth:
        raise SystemExit(f"error: no admin token: set ${TOKEN_ENV} (or pass --insecure-no-auth)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve_forever(
        ServerOptions(
            port=args.port,
            data_dir=args.data,
            memory=args.memory,
            token=args.token,
            time_scale=args.time_scale,
            watch_cache_size=args.watch_cache_size,
            port_file=args.port_file,
            paused=tuple(args.pause),
            faults=json.loads(args.faults) if args.faults else None,
            simulate=not args.no_simulation,
            resync_seconds=args.resync_seconds,
            rbac=args.rbac,
            tls=ensure_certificates(args.tls_dir) if args.tls_dir else None,
        )
    )


if __name__ == "__main__":
    main()
