"""Start and stop a local Redis Cluster for tests, on free loopback ports.

Used by `.ci/run` (the third store setup: the machine's `redis-server`, Redis
7.0, made into a 3-node cluster with `redis-cli --cluster create`) and by
`tests/acceptance/test_cluster.py` (the same with Valkey's binaries).

    python -m tests.cluster start --dir D [--server redis-server --cli redis-cli]
        prints the URL of the first node
    python -m tests.cluster stop --dir D

Every node gets an explicit cluster bus port (the default, port + 10000, can
exceed 65535 for high ports) and keeps nothing on disk.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
from functools import partial
from pathlib import Path

from tests.polling import wait_until  # standard library only: no store needed

STATE = "cluster.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(cli: str, port: int) -> bool:
    out = subprocess.run([cli, "-p", str(port), "ping"], capture_output=True, timeout=10)
    return b"PONG" in out.stdout


def _sees_cluster_ok(cli: str, port: int) -> bool:
    out = subprocess.run([cli, "-p", str(port), "cluster", "info"], capture_output=True,
                         timeout=10)
    return b"cluster_state:ok" in out.stdout


def start(folder: Path, server: str = "redis-server", cli: str = "redis-cli",
          nodes: int = 3) -> str:
    """Start `nodes` primaries, join them into a cluster; the first node's URL."""
    folder.mkdir(parents=True, exist_ok=True)
    ports = [free_port() for _ in range(nodes)]
    (folder / STATE).write_text(json.dumps({"ports": ports, "cli": cli}))
    for port in ports:
        node = folder / str(port)
        node.mkdir(exist_ok=True)
        subprocess.run([server, "--port", str(port), "--bind", "127.0.0.1",
                        "--cluster-port", str(free_port()),
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--dir", str(node), "--save", "", "--appendonly", "no",
                        "--daemonize", "yes", "--logfile", str(node / "log"),
                        "--pidfile", str(node / "pid")], check=True, timeout=30)
    for port in ports:
        wait_until(partial(_answers, cli, port), 10, f"node {port} to answer", every=0.1)
    subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                    "--cluster-replicas", "0", "--cluster-yes"], check=True,
                   capture_output=True, timeout=60)
    for port in ports:
        wait_until(partial(_sees_cluster_ok, cli, port), 30,
                   f"node {port} to see the cluster ready", every=0.1)
    return f"redis://127.0.0.1:{ports[0]}/0"


def stop(folder: Path) -> None:
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return
    for port in state["ports"]:
        subprocess.run([state["cli"], "-p", str(port), "shutdown", "nosave"],
                       capture_output=True, timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--server", default="redis-server")
    parser.add_argument("--cli", default="redis-cli")
    args = parser.parse_args(argv)
    if args.action == "start":
        print(start(args.dir, args.server, args.cli))
    else:
        stop(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
