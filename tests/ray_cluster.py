"""Ray nodes as separate processes on this machine, for the tests and the benchmark that join a cluster by address.

Each node is a ``ray start --block`` process in its own session, with a fixed small ``num_cpus`` and its own
loopback address (127.0.0.2 for the head, where the test's own process is the driver; 127.0.0.3, 127.0.0.4... for
the others: Ray would turn 127.0.0.1 into the machine's outward address), started from a clean environment (no
repository on ``PYTHONPATH``, its working directory outside the checkout): what a fresh node has. Every process of
a node carries a marker in its environment, which Ray's raylet passes on to the workers it starts, so a node can be
found and killed whole, workers included (``kill``), and whatever is left is stopped by temp directory at the end
(``stop``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Ray's own switches for a cluster on loopback: a second node may join one, no usage report, no cluster token.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
MARKER = "HOPFORGE_TEST_RAY_NODE"
# Ray turns 127.0.0.1 into the machine's outward address on a cluster: the nodes take other loopback addresses.
HEAD_IP = "127.0.0.2"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the process for {host}:{port} exited with {proc.returncode}")
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"nothing answered on {host}:{port} within {timeout_s:.0f} s")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the repository on PYTHONPATH, hopforge settings or a Prefect API: a fresh node's."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith(("HOPFORGE_", "PREFECT_"))}
    return {**env, **RAY_ENV, **extra}


def marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (a node's raylet, agents and workers)."""
    found = []
    needle = marker.encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes() + b"\0":
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in "ZX":
            found.append(int(entry.name))
    return found


@dataclass
class Node:
    name: str
    ip: str
    proc: subprocess.Popen
    log: Path
    cluster: str  # the cluster's temp directory name: two clusters on the machine never share a marker

    @property
    def marker(self) -> str:
        return f"{MARKER}={self.cluster}/{self.name}"

    def pids(self) -> list[int]:
        return marked(self.marker)


@dataclass
class LocalCluster:
    """A head and its added nodes; ``address`` is the head's GCS address, what a driver joins."""

    ray_bin: Path
    temp_dir: Path
    logs: Path
    address: str = ""
    nodes: list[Node] = field(default_factory=list)

    def start_head(self, num_cpus: int = 1, ip: str = HEAD_IP) -> Node:
        port = free_port(ip)
        node = self._start("head", ip, ["--head", "--port", str(port), "--temp-dir", str(self.temp_dir),
                                        "--include-dashboard=false"], num_cpus)  # fmt: skip
        wait_port(ip, port, 120, node.proc)
        self.address = f"{ip}:{port}"
        return node

    def add_node(self, name: str, ip: str, num_cpus: int = 1, ray_bin: Path | None = None) -> Node:
        """Start a node joining the head; ``ray_bin``: another environment's ``ray`` (same Ray and Python)."""
        return self._start(name, ip, ["--address", self.address], num_cpus, ray_bin)

    def _start(self, name: str, ip: str, args: list[str], num_cpus: int, ray_bin: Path | None = None) -> Node:
        log = self.logs / f"{name}.log"
        env = clean_env(**{MARKER: f"{self.temp_dir.name}/{name}"})
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(ray_bin or self.ray_bin), "start", *args, "--node-ip-address", ip, "--num-cpus", str(num_cpus),
                 "--num-gpus", "0", "--dashboard-agent-listen-port", str(free_port()), "--block"],
                cwd=self.temp_dir, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        node = Node(name, ip, proc, log, self.temp_dir.name)
        self.nodes.append(node)
        return node

    def wait_alive(self, ips: list[str], timeout_s: float = 120) -> None:
        """Wait until exactly the nodes at ``ips`` are alive (asked from a separate driver process)."""
        script = ("import ray, sys, time\nray.init(address=sys.argv[1])\nfor _ in range(int(sys.argv[2]) * 2):\n"
                  "    ips = sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive'])\n"
                  "    if ips == sorted(sys.argv[3:]): break\n    time.sleep(0.5)\nprint(ips)\n")  # fmt: skip
        python = self.ray_bin.parent / "python"
        done = subprocess.run([str(python), "-c", script, self.address, str(int(timeout_s)), *ips],
                              capture_output=True, text=True, timeout=timeout_s + 60, env=clean_env(),
                              cwd=self.temp_dir)  # fmt: skip
        if str(sorted(ips)) not in done.stdout:
            logs = "\n".join(n.log.read_text(errors="replace")[-1500:] for n in self.nodes)
            raise RuntimeError(f"nodes {ips} not alive: {done.stdout} {done.stderr[-1500:]}\n{logs}")

    def remove_node(self, node: Node) -> None:
        """Stop ``node`` the way ``ray stop`` does (SIGTERM to its ``ray start`` group): it leaves the cluster at
        once, not after the missed heartbeats of a killed one."""
        try:
            os.killpg(node.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            node.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait()
        for pid in node.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self, node: Node) -> float:
        """SIGKILL every process of ``node`` at once (stopped first, so none acts after another died); return the
        ``time.time()`` at which all of them were stopped."""
        os.killpg(node.proc.pid, signal.SIGSTOP)
        pids = node.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        at = time.time()
        os.killpg(node.proc.pid, signal.SIGKILL)
        for pid in pids + node.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.proc.wait(timeout=10)
        return at

    def stop(self) -> None:
        """Stop every node: its process group (SIGTERM, then SIGKILL), then any process still marked as one of this
        cluster's or running from its temp directory."""
        for n in self.nodes:
            try:
                os.killpg(n.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for n in self.nodes:
            try:
                n.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(n.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            n.proc.wait()
        left = {pid for n in self.nodes for pid in n.pids()}
        marker = str(self.temp_dir)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    left.add(int(entry.name))
            except OSError:
                continue
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def new_cluster(ray_bin: Path, logs: Path) -> LocalCluster:
    # Ray's socket paths must stay short: its own directory under /tmp, not pytest's deep tmp_path.
    temp_dir = Path(tempfile.mkdtemp(prefix="hfnodes-", dir="/tmp"))
    logs.mkdir(parents=True, exist_ok=True)
    return LocalCluster(ray_bin=ray_bin, temp_dir=temp_dir, logs=logs)


def remove(cluster: LocalCluster) -> None:
    """Stop the cluster; keep the head's process logs beside the nodes' (for a failed test), drop the rest."""
    cluster.stop()
    logs = cluster.temp_dir / "session_latest" / "logs"
    for name in ("ray_process_exit.log", "gcs_server.out", "gcs_server.err", "raylet.out", "raylet.err"):
        if (logs / name).is_file() and cluster.logs.is_dir():
            shutil.copy(logs / name, cluster.logs / f"head-{name}")
    shutil.rmtree(cluster.temp_dir, ignore_errors=True)
