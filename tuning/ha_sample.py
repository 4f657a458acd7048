"""Samples a master's GET_BROKER_HA_STATUS (907) every 100 ms and prints the
replication lag of its first slave: bytes (master end - slave ack) and ms
(how long ago the master's end passed the slave's ack).

    python3 tuning/ha_sample.py MASTER_ADDR SECONDS
"""

import json
import sys
import time
from bisect import bisect_left
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
from remoting import RemotingConnection  # noqa: E402

GET_BROKER_HA_STATUS = 907


def main():
    addr, seconds = sys.argv[1], float(sys.argv[2])
    conn = RemotingConnection(addr)
    times, ends, lag_bytes, lag_ms = [], [], [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        _, body = conn.request(GET_BROKER_HA_STATUS, {})
        info = json.loads(body)
        now = time.monotonic()
        end = info["masterCommitLogMaxOffset"]
        times.append(now)
        ends.append(end)
        links = info["haConnectionInfo"]
        if links and len(ends) > 1 and ends[-1] > ends[0]:
            acked = links[0]["slaveAckOffset"]
            lag_bytes.append(end - acked)
            # The first sample at which the master had passed the slave's ack.
            at = bisect_left(ends, acked)
            lag_ms.append(0.0 if at >= len(ends) - 1 else (now - times[at]) * 1000)
        time.sleep(0.1)
    conn.close()
    if not lag_bytes:
        print("no load seen")
        return

    def pct(values, p):
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))]

    print(
        f"replication lag over {len(lag_bytes)} samples: "
        f"bytes p50 {pct(lag_bytes, 0.5)} p99 {pct(lag_bytes, 0.99)} max {max(lag_bytes)}; "
        f"ms p50 {pct(lag_ms, 0.5):.0f} p99 {pct(lag_ms, 0.99):.0f} max {max(lag_ms):.0f} "
        f"(ms resolution: the 100 ms sampling)"
    )


if __name__ == "__main__":
    main()
