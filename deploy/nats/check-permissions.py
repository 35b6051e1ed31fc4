#!/usr/bin/env python3
"""Check snarkflow's NATS permissions (deploy/nats/permissions.conf) against a real nats-server.

How to run (needs nats-server on PATH, bash, coreutils and the nats-py client):

    python3 -m venv /tmp/nats-venv && /tmp/nats-venv/bin/pip install nats-py
    /tmp/nats-venv/bin/python deploy/nats/check-permissions.py [--nats-server PATH] [-v]

What it does: copies deploy/nats/nats.conf and permissions.conf to a temporary directory,
generates fresh credentials there with deploy/scripts/nats-credentials.sh, and starts
`nats-server -c nats.conf` on a free loopback port with a temporary JetStream store. Then, as
each role (user gateway / synth-worker / gpu-worker, with the inbox prefix the services use:
_INBOX_gateway / _INBOX_synth / _INBOX_gpu), it performs the NATS operations the Rust code
performs, on the exact subjects async-nats 0.42 uses (crates/bus: Bus::connect's get-or-create,
pulls and acks, JetStream publishes, KV create/update/direct get/list, object store
info/put/get/delete), and checks that each allowed operation works and each forbidden one is
refused with a permissions violation. Lines marked LIMIT are operations subject permissions
cannot restrict (see permissions.conf); they are checked to behave as documented.

Exit status: 0 when every check passed, 1 on any mismatch, 2 when the setup failed.
"""

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import nats  # noqa: F401 - only to say what is missing
except ImportError:  # pragma: no cover
    sys.exit("nats-py is missing: python3 -m venv /tmp/nats-venv && /tmp/nats-venv/bin/pip install nats-py")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CREDENTIALS_SCRIPT = REPO / "deploy" / "scripts" / "nats-credentials.sh"

from permcheck.checks import run_checks  # noqa: E402
from permcheck.role import Results  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_for_port(port, proc, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nats-server exited with {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("nats-server did not start listening")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    parser.add_argument("-v", "--verbose", action="store_true", help="show details of passing checks too")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (config, log)")
    parser.add_argument("--conf-dir", type=Path, default=HERE,
                        help="directory holding the nats.conf and permissions.conf to check (default: this one)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="snarkflow-nats-check-"))
    proc = None
    try:
        for name in ("nats.conf", "permissions.conf"):
            shutil.copy(args.conf_dir / name, tmp / name)
        subprocess.run(["bash", str(CREDENTIALS_SCRIPT), str(tmp)], check=True, stdout=subprocess.DEVNULL)
        passwords = {u: (tmp / f"{u}.password").read_text().strip() for u in ("gateway", "synth-worker", "gpu-worker")}
        test = subprocess.run([args.nats_server, "-t", "-c", str(tmp / "nats.conf")], capture_output=True, text=True)
        if test.returncode != 0:
            print(f"nats-server rejects the configuration:\n{test.stdout}{test.stderr}", file=sys.stderr)
            return 2
        version = subprocess.run([args.nats_server, "--version"], capture_output=True, text=True).stdout.strip()
        port = free_port()
        log = open(tmp / "nats-server.log", "w")
        proc = subprocess.Popen(
            # the store is nats.conf's relative store_dir, under the temporary working directory
            [args.nats_server, "-c", str(tmp / "nats.conf"), "-a", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
        )
        print(f"{version} on 127.0.0.1:{port}, config {tmp / 'nats.conf'}", flush=True)
        asyncio.run(wait_for_port(port, proc))
        results = Results(args.verbose)
        asyncio.run(run_checks(f"nats://127.0.0.1:{port}", passwords, results))
        total, failed = len(results.rows), results.failures
        limits = sum(1 for r in results.rows if r[2] == "LIMIT")
        print(f"\n{total - len(failed)}/{total} checks passed ({limits} LIMIT: allowed by design, see permissions.conf)")
        if failed:
            print("mismatches:")
            for role, op, expected, actual, _, detail in failed:
                print(f"  {role}: {op}: expected {expected}, got {actual} {detail}")
            return 1
        return 0
    except Exception as e:  # noqa: BLE001
        print(f"setup failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
