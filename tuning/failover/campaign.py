"""Measures, per client, the outage a kill -9 of the master causes in
controller mode (run by tuning/failover.sh; see there for the setup).

For each cluster (Ferrocket, then Apache RocketMQ 5.5.0) it starts the
cluster and one producer per client, each sending one message every
PERIOD_MS and printing the time of every acknowledged send; then KILLS
times: waits until the in-sync set has all three brokers and every
producer acknowledged within the last second, waits a random 0 to
KILL_JITTER_S seconds (default 30, SEED for the draw), kills -9 the master the
controller names, polls the controller (GET_SYNC_STATE_DATA, every 20 ms)
for the new master, waits for each producer's first acknowledged send after
the kill, restarts the killed broker on its store and waits until it is back
in the in-sync set. One JSON line per kill goes to RESULTS (appended as it
goes), a summary to stdout.

  campaign.py WORKDIR RESULTS KILLS [ferrocket|apache ...]
"""

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from clusters import ROOT, Apache, Ferrocket, route_master, sync_state, wait_for

PERIOD_MS = int(os.environ.get("PERIOD_MS", "10"))
ACK_TIMEOUT_S = int(os.environ.get("ACK_TIMEOUT_S", "90"))
REJOIN_TIMEOUT_S = int(os.environ.get("REJOIN_TIMEOUT_S", "180"))
KILL_JITTER_S = float(os.environ.get("KILL_JITTER_S", "30"))
SEED = int(os.environ.get("SEED", str(int(time.time()))))
RANDOM = random.Random(SEED)
TARGET = Path(os.environ.get("TARGET_DIR", ROOT / "target"))


def now_ms():
    return int(time.time() * 1000)


class Producer:
    """One client's producer process; reads its ack times as they come."""

    def __init__(self, client, cmd, workdir):
        self.client = client
        self.out_path = workdir / f"producer-{client}.out"
        self.out = open(self.out_path, "w")
        home = workdir / f"home-{client}"
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(home), "JAVA_TOOL_OPTIONS": f"-Duser.home={home}"}
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=open(workdir / f"producer-{client}.err", "w"),
                                     stdin=subprocess.DEVNULL, cwd=workdir, env=env)
        self.reader = open(self.out_path)
        self.acks = []
        self.errors = 0
        self._partial = ""

    def poll(self):
        data = self._partial + self.reader.read()
        lines = data.split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.startswith("E "):
                self.errors += 1
            elif line.strip():
                ack, start = line.split()
                self.acks.append((int(ack), int(start)))

    def first_ack_after(self, t_ms):
        """The ack time of the first acknowledged send started after t_ms."""
        self.poll()
        later = None
        for ack, start in reversed(self.acks):
            if start <= t_ms:
                break
            later = ack
        return later

    def last_ack(self):
        self.poll()
        return self.acks[-1][0] if self.acks else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def client_commands(cluster, topic):
    java = os.environ.get("JAVA", "java")
    here = Path(__file__).resolve().parent
    remoting_cp = (TARGET / "failover" / "remoting.cp").read_text().strip()
    grpc_cp = (TARGET / "failover" / "grpc.cp").read_text().strip()
    python = str(TARGET / "interop-venv" / "bin" / "python")
    cmds = {
        "cpp": [python, str(here / "cpp_producer.py"), cluster.namesrv, topic, str(PERIOD_MS)],
        "java-remoting": [java, "-Xmx256m", "-cp", remoting_cp, str(here / "RemotingProducer.java"),
                          cluster.namesrv, topic, str(PERIOD_MS)],
    }
    poll_ms = os.environ.get("JAVA_POLL_MS")
    if poll_ms:
        cmds[f"java-remoting-poll{poll_ms}ms"] = [*cmds["java-remoting"], poll_ms]
    for client, endpoints in cluster.grpc_endpoints().items():
        cmds[client] = [java, "-Xmx256m", "-cp", grpc_cp, str(here / "GrpcProducer.java"), endpoints, topic,
                        str(PERIOD_MS)]
    return cmds


def steady(cluster, producers):
    """All three in sync and every producer acknowledged within a second."""
    master, _, in_sync = sync_state(cluster.controller)
    if master is None or len(in_sync) < 3:
        return False
    t = now_ms()
    return all((p.last_ack() or 0) > t - 1000 for p in producers)


def one_kill(cluster, producers, k, topic):
    wait_for(lambda: steady(cluster, producers), REJOIN_TIMEOUT_S, "three in sync and every producer acking")
    # Clients re-read routes on timers of their own (30 s): a kill at a
    # random moment of them, not in step with them.
    delay_s = RANDOM.uniform(0, KILL_JITTER_S)
    time.sleep(delay_s)
    old_master, old_epoch, _ = sync_state(cluster.controller)
    victim = cluster.broker_ports.index(old_master)
    t_kill = now_ms()
    cluster.kill9(victim)
    t_elect, new_epoch, t_route = None, None, None
    pending = {p.client: p for p in producers}
    record = {"cluster": cluster.name, "kill": k, "victim_port": old_master, "t_kill": t_kill,
              "delay_ms": int(delay_s * 1000), "ack_ms": {}}
    deadline = time.monotonic() + ACK_TIMEOUT_S
    while time.monotonic() < deadline and (pending or t_elect is None or t_route is None):
        if t_elect is None:
            try:
                master, epoch, _ = sync_state(cluster.controller)
                if master is not None and master != old_master and epoch != old_epoch:
                    t_elect, new_epoch, new_master = now_ms(), epoch, master
            except (OSError, ValueError):
                pass
        if t_elect is not None and t_route is None:
            try:
                if route_master(cluster.namesrv, topic) == new_master:
                    t_route = now_ms()
            except (OSError, ValueError):
                pass
        for client, p in list(pending.items()):
            ack = p.first_ack_after(t_kill)
            if ack is not None:
                record["ack_ms"][client] = ack - t_kill
                del pending[client]
        time.sleep(0.02)
    record.update(election_ms=None if t_elect is None else t_elect - t_kill, new_epoch=new_epoch,
                  route_ms=None if t_route is None else t_route - t_kill,
                  no_ack_within_s={c: ACK_TIMEOUT_S for c in pending})
    t_restart = now_ms()
    cluster.start_broker(victim)
    wait_for(lambda: len(sync_state(cluster.controller)[2]) == 3, REJOIN_TIMEOUT_S,
             "the killed broker back in the in-sync set")
    record["rejoin_ms"] = now_ms() - t_restart
    return record


def run_cluster(cluster, kills, results):
    topic = f"FailoverTopic{int(time.time())}"
    producers = []
    try:
        cluster.start()
        wait_for(lambda: len(sync_state(cluster.controller)[2]) == 3, REJOIN_TIMEOUT_S, "three in sync")
        cluster.create_topic(topic)
        time.sleep(3)
        for client, cmd in client_commands(cluster, topic).items():
            producers.append(Producer(client, cmd, cluster.dir))
        wait_for(lambda: steady(cluster, producers), 180, "every producer acking")
        for k in range(1, kills + 1):
            record = one_kill(cluster, producers, k, topic)
            record["acks_total"] = {p.client: len(p.acks) for p in producers}
            record["errors_total"] = {p.client: p.errors for p in producers}
            with open(results, "a") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
    finally:
        for p in producers:
            p.stop()
        cluster.stop()


def summarize(results):
    if not results.exists():
        return
    rows = [json.loads(line) for line in open(results)]
    by = {}
    for r in rows:
        by.setdefault((r["cluster"], "election"), []).append(r["election_ms"])
        by.setdefault((r["cluster"], "route names new master"), []).append(r.get("route_ms"))
        for client, ms in r["ack_ms"].items():
            by.setdefault((r["cluster"], client), []).append(ms)
        for client in r["no_ack_within_s"]:
            by.setdefault((r["cluster"], client), []).append(None)
    print("\n| cluster | what | kills | median ms | max ms | no ack within limit |\n|---|---|---|---|---|---|")
    for (cluster, what), values in sorted(by.items()):
        got = [v for v in values if v is not None]
        med = statistics.median(got) if got else "-"
        print(f"| {cluster} | {what} | {len(values)} | {med} | {max(got) if got else '-'} |"
              f" {len(values) - len(got)} |")


def main():
    workdir, results, kills = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    which = sys.argv[4:] or ["ferrocket", "apache"]
    binary = TARGET / "debug" / "ferrocket" if not os.environ.get("FERROCKET_BIN") else os.environ["FERROCKET_BIN"]
    for name in which:
        if name == "ferrocket":
            cluster = Ferrocket(binary, workdir / "ferrocket")
        else:
            cluster = Apache(TARGET / "apache-rocketmq" / "5.5.0", workdir / "apache", binary)
        print(f"== {cluster.name}: {kills} kills, SEED={SEED}", flush=True)
        run_cluster(cluster, kills, results)
    summarize(results)


if __name__ == "__main__":
    main()
