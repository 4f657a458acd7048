"""The two clusters tuning/failover.sh kills masters in: Ferrocket's and
Apache RocketMQ 5.5.0's controller mode, each one controller, a name server,
three brokers of one set (allAckInSyncStateSet=true, as the README sets it
up) and a gRPC proxy, on 127.0.0.1 ports chosen here, data under WORKDIR.
Every process is started here and stopped by its pid."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interop"))
from remoting import RemotingConnection  # noqa: E402

GET_SYNC_STATE_DATA = 1006
GET_ROUTEINFO_BY_TOPIC = 105
BROKER_NAME = "failover-a"


def free_port(span=(0,)):
    """A port P with P+d free for every d in span."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 1100 or port > 64000:
            continue
        if all(_bindable(port + d) for d in span):
            return port
    raise RuntimeError("no free port")


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def wait_for(predicate, timeout_s, what, interval_s=0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(interval_s)
    raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")


def sync_state(controller_addr):
    """(master port or None, master epoch, in-sync ports) from the controller."""
    conn = RemotingConnection(controller_addr)
    try:
        header, body = conn.request(GET_SYNC_STATE_DATA, {}, json.dumps([BROKER_NAME]).encode())
    finally:
        conn.close()
    if header.get("code") != 0 or not body:
        return None, None, []
    info = json.loads(body)["replicasInfoTable"].get(BROKER_NAME, {})
    master = info.get("masterAddress") or ""
    in_sync = sorted(int(r["brokerAddress"].rsplit(":", 1)[1]) for r in info.get("inSyncReplicas", [])
                     if r.get("alive", True))
    port = int(master.rsplit(":", 1)[1]) if ":" in master else None
    return port, info.get("masterEpoch"), in_sync


def route_master(namesrv_addr, topic):
    """The port the name server's route for `topic` names as brokerId 0."""
    conn = RemotingConnection(namesrv_addr)
    try:
        header, body = conn.request(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    finally:
        conn.close()
    if header.get("code") != 0:
        return None
    # Java's name server writes the map's integer keys unquoted (not JSON).
    addrs = re.search(r'"brokerAddrs"\s*:\s*\{([^}]*)\}', body.decode())
    if not addrs:
        return None
    ids = dict(re.findall(r'"?(\d+)"?\s*:\s*"[^":]+:(\d+)"', addrs.group(1)))
    return int(ids["0"]) if "0" in ids else None


def stop_pid(pid, grace_s=15):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
        except ChildProcessError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Ferrocket:
    name = "ferrocket"

    def __init__(self, binary, workdir):
        self.bin, self.dir = str(binary), Path(workdir)
        self.procs = {}  # role -> Popen
        self.broker_ports = [free_port() for _ in range(3)]
        self.ha_ports = [free_port() for _ in range(3)]
        self.controller_port, self.namesrv_port, self.proxy_port = free_port(), free_port(), free_port()

    def _spawn(self, role, args):
        log = open(self.dir / f"{role}.log", "a")
        self.procs[role] = subprocess.Popen([self.bin, *args], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self._spawn("controller", ["controller", "--listen-addr", "127.0.0.1", "--listen-port",
                                   str(self.controller_port), "--set",
                                   f"controllerStorePath={self.dir / 'controller'}"])
        self._spawn("namesrv", ["namesrv", "--listen-addr", "127.0.0.1", "--listen-port",
                                str(self.namesrv_port), "--set", f"kvConfigPath={self.dir / 'kv.json'}"])
        for port in (self.controller_port, self.namesrv_port):
            wait_for(lambda p=port: listening(p), 60, f"port {port}")
        for i in range(3):
            self.start_broker(i)
        self._spawn("proxy", ["proxy", "-n", self.namesrv, "--listen-addr", "127.0.0.1",
                              "--listen-port", str(self.proxy_port)])
        wait_for(lambda: listening(self.proxy_port), 60, "the proxy")

    def start_broker(self, i):
        port = self.broker_ports[i]
        settings = ["enableControllerMode=true", f"controllerAddr={self.controller}",
                    "allAckInSyncStateSet=true", f"haListenPort={self.ha_ports[i]}", "enableProxy=true",
                    "diskSpaceCleanForciblyRatio=100"]
        args = ["broker", "--listen-addr", "127.0.0.1", "--listen-port", str(port), "--broker-ip1",
                "127.0.0.1", "-n", self.namesrv, "--store-path-root-dir", str(self.dir / f"b{i}"),
                "--broker-name", BROKER_NAME, "--auto-create-topic-enable", "true"]
        for setting in settings:
            args += ["--set", setting]
        self._spawn(f"broker{i}", args)
        wait_for(lambda: listening(port), 120, f"broker {i}")

    def kill9(self, i):
        proc = self.procs[f"broker{i}"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def create_topic(self, topic):
        for port in self.broker_ports:
            subprocess.run([self.bin, "admin", "-n", self.namesrv, "topic", "create", "-t", topic,
                            "-b", f"127.0.0.1:{port}", "-r", "4", "-w", "4"],
                           check=True, stdout=subprocess.DEVNULL, cwd=self.dir)

    @property
    def namesrv(self):
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def controller(self):
        return f"127.0.0.1:{self.controller_port}"

    def grpc_endpoints(self):
        """The v5 client endpoints: in-broker (every broker) and the proxy."""
        inbroker = ";".join(f"127.0.0.1:{p}" for p in self.broker_ports)
        return {"v5-inbroker": inbroker, "v5-proxy": f"127.0.0.1:{self.proxy_port}"}

    def stop(self):
        for role in ["proxy", "broker0", "broker1", "broker2", "namesrv", "controller"]:
            proc = self.procs.get(role)
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


class Apache:
    """Apache RocketMQ 5.5.0, through scripts/peers/run-apache-rocketmq.sh."""

    name = "apache-5.5.0"

    def __init__(self, home, workdir, ferrocket_bin):
        self.home, self.dir, self.ferrocket_bin = str(home), Path(workdir), str(ferrocket_bin)
        self.run = str(ROOT / "scripts" / "peers" / "run-apache-rocketmq.sh")
        self.pids = {}
        self.controller_port, self.namesrv_port = free_port(), free_port()
        self.broker_ports = []
        while len(self.broker_ports) < 3:
            port = free_port(span=(-2, 0, 1))
            if all(abs(port - p) > 3 for p in self.broker_ports):
                self.broker_ports.append(port)
        self.proxy_port = free_port(span=(0, 1))

    def _run(self, name, args, settings=()):
        role = name.rstrip("0123456789")
        cmd = [self.run, "--home", self.home, "--dir", str(self.dir / name), role, *args]
        for setting in settings:
            cmd += ["--set", setting]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             env={**os.environ, "READY_TIMEOUT_S": "180"}).stdout
        values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        self.pids[name] = int(values["APACHE_ROCKETMQ_PID"])

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self._run("controller", ["--port", str(self.controller_port)])
        self._run("namesrv", ["--port", str(self.namesrv_port)])
        for i in range(3):
            self.start_broker(i)
        self._run("proxy", ["--port", str(self.proxy_port), "--namesrv", self.namesrv])

    def start_broker(self, i):
        settings = ["enableControllerMode=true", f"controllerAddr={self.controller}",
                    "allAckInSyncStateSet=true", "brokerClusterName=DefaultCluster"]
        self._run(f"broker{i}", ["--port", str(self.broker_ports[i]), "--namesrv", self.namesrv,
                                 "--name", BROKER_NAME], settings)

    def kill9(self, i):
        pid = self.pids[f"broker{i}"]
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), 10, f"pid {pid} to exit")

    def create_topic(self, topic):
        for port in self.broker_ports:
            subprocess.run([self.ferrocket_bin, "admin", "-n", self.namesrv, "topic", "create", "-t", topic,
                            "-b", f"127.0.0.1:{port}", "-r", "4", "-w", "4"],
                           check=True, stdout=subprocess.DEVNULL, cwd=self.dir)

    @property
    def namesrv(self):
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def controller(self):
        return f"127.0.0.1:{self.controller_port}"

    def grpc_endpoints(self):
        return {"v5-proxy": f"127.0.0.1:{self.proxy_port}"}

    def stop(self):
        for role in ["proxy", "broker0", "broker1", "broker2", "namesrv", "controller"]:
            pid = self.pids.get(role)
            if pid and _alive(pid):
                stop_pid(pid, grace_s=20)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
