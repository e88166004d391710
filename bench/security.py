"""What TLS and SASL cost on produce and fetch throughput: one Weir, four listeners, same load.

    python -m bench.security [--messages 100000] [--size 1024] [--rounds 3]

One broker with PLAINTEXT, SSL, SASL_PLAINTEXT (SCRAM-SHA-512) and SASL_SSL (SCRAM-SHA-512)
listeners; confluent-kafka produces ``--messages`` records of ``--size`` bytes (acks=all) to a
fresh topic through each listener and fetches them back, rounds alternating the listeners;
medians in MB/s and the ratio to PLAINTEXT are printed. A throwaway CA and broker certificate are
made with ``cryptography`` (the test extra). Fetch on PLAINTEXT and SASL_PLAINTEXT sends segment
bytes with sendfile; on TLS listeners it reads them and writes through the TLS transport.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from weir.testing.certs import Pki

from bench.throughput import create_topic, fetch, free_port, produce, wait_until_serving

REPO = Path(__file__).resolve().parent.parent
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="weir-bench-security-"))
    pki = Pki(work / "pki")
    server = pki.issue("broker", [("CN", "localhost")], server=True)
    ports = {name: free_port() for name in LISTENERS}
    properties = work / "server.properties"
    properties.write_text(
        "listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()) + "\n"
        f"ssl.keystore.location={server.keystore_path}\nsasl.enabled.mechanisms=SCRAM-SHA-512\n")
    process = subprocess.Popen([sys.executable, "-m", "weir.broker", "--config", str(properties),
                                "--data-dir", str(work / "data"), "--log-level", "WARNING"], cwd=REPO)
    try:
        wait_until_serving(f"127.0.0.1:{ports['PLAINTEXT']}", time.monotonic() + 30)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
        upsert = UserScramCredentialUpsertion("bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"pw")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(10)
        clients = {"PLAINTEXT": {}, "SSL": {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_path)}}
        sasl = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bench", "sasl.password": "pw"}
        clients["SASL_PLAINTEXT"] = {"security.protocol": "SASL_PLAINTEXT", **sasl}
        clients["SASL_SSL"] = {**clients["SSL"], "security.protocol": "SASL_SSL", **sasl}
        results = {name: ([], []) for name in LISTENERS}
        for round_number in range(args.rounds):
            for name in LISTENERS:
                bootstrap, topic = f"127.0.0.1:{ports[name]}", f"bench-{name.lower()}-{round_number}"
                create_topic(bootstrap, topic, 1, clients[name])
                results[name][0].append(produce(bootstrap, topic, args.messages, args.size, client=clients[name]))
                results[name][1].append(fetch(bootstrap, topic, 1, args.messages, args.size, client=clients[name]))
        base_produce, base_fetch = (statistics.median(v) for v in results["PLAINTEXT"])
        print(f"{args.messages} x {args.size} B, median of {args.rounds} round(s), MB/s (ratio to PLAINTEXT)")
        for name in LISTENERS:
            p, f = (statistics.median(v) for v in results[name])
            print(f"  {name:15s} produce {p:7.1f} ({p / base_produce:4.2f})   fetch {f:7.1f} ({f / base_fetch:4.2f})")
    finally:
        process.terminate()
        process.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
