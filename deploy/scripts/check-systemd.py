"""What `systemd-analyze verify` cannot see in deploy/systemd (issue 43 item 6, issue 39 item 6):
  - every NATS password a unit loads is a file deploy/scripts/nats-credentials.sh writes;
  - each snarkflow unit runs as a user of its own, with a state directory of its own;
  - ReadOnlyPaths=/ReadWritePaths= name no directory nothing creates (a `-` prefix, or a
    directory a unit's StateDirectory= makes);
  - no PrivateTmp= where a unit reads parameters (it hides /var/tmp/filecoin-proof-parameters);
  - the gpu-worker's start timeout covers a 32 GiB preload and digest check (>= 900 s);
  - every worker's example environment serves its status port (SNARKFLOW_STATUS_LISTEN), one
    port per gpu-worker instance;
  - the synth-worker's malloc asks for huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1);
  - a nats-server unit exists.
Run by deploy/scripts/check-systemd.sh; standard library only."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy/systemd"
CREDENTIALS_SCRIPT = ROOT / "deploy/scripts/nats-credentials.sh"
READS_PARAMS = ("snarkflow-gateway.service", "snarkflow-gpu-worker@.service")


def settings(path):
    """[(key, value)] of a unit's [Service] section, in order (keys repeat)."""
    out, section = [], None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, _, value = line.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def values(unit, key):
    return [v for k, v in unit if k == key]


def seconds(text):
    m = re.fullmatch(r"(\d+)\s*(s|min|m)?", text or "")
    if not m:
        return None
    return int(m.group(1)) * (60 if m.group(2) in ("min", "m") else 1)


def credential_files():
    """The file names nats-credentials.sh writes per role."""
    text = CREDENTIALS_SCRIPT.read_text()
    users = re.search(r"^users=\(([^)]*)\)", text, re.M).group(1).split()
    suffix = re.search(r'"\$out/\$user(\.[a-z]+)"', text).group(1)
    return {f"{user}{suffix}" for user in users}


def env_file(name):
    path = UNITS / name
    if not path.exists():
        return None
    return dict(line.split("=", 1) for line in path.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#") and "=" in line)


def main():
    problems = []
    units = {p.name: settings(p) for p in sorted(UNITS.glob("*.service"))}
    if "nats-server.service" not in units:
        problems.append("no nats-server.service: the fleet recipe starts NATS too")
    written = credential_files()
    state_dirs = {f"/var/lib/{d}" for unit in units.values() for v in values(unit, "StateDirectory") for d in v.split()}
    users = {}
    for name, unit in units.items():
        for value in values(unit, "LoadCredential"):
            credential, _, source = value.partition(":")
            # the NATS passwords come from nats-credentials.sh; other credentials (the
            # curio-proxy's key and token) are the operator's own files
            if credential == "nats-password" and pathlib.PurePath(source).name not in written:
                problems.append(f"{name}: LoadCredential= loads {source}, a file nats-credentials.sh never writes "
                                f"(it writes {', '.join(sorted(written))})")
        for key in ("ReadOnlyPaths", "ReadWritePaths", "BindReadOnlyPaths", "BindPaths"):
            for value in values(unit, key):
                for path in value.split():
                    path = path.split(":")[0]
                    if not path.startswith(("-", "+-")) and path not in state_dirs:
                        problems.append(f"{name}: {key}={path} fails the start while nothing creates it "
                                        "(StateDirectory=, or prefix it with -)")
        if not name.startswith("snarkflow-"):
            continue
        user = (values(unit, "User") or ["root"])[-1]
        if "yes" in values(unit, "DynamicUser"):
            user = f"a dynamic user of {name}"
        users.setdefault(user, []).append(name)
        if not values(unit, "StateDirectory"):
            problems.append(f"{name}: no StateDirectory= of its own")
        if name in READS_PARAMS and "yes" in values(unit, "PrivateTmp"):
            problems.append(f"{name}: PrivateTmp=yes hides /var/tmp/filecoin-proof-parameters from a unit that reads parameters")
    for user, names in users.items():
        if len(names) > 1:
            problems.append(f"{' and '.join(names)} run as the same user {user}: one user per role")
    gpu = units.get("snarkflow-gpu-worker@.service", [])
    timeout = seconds((values(gpu, "TimeoutStartSec") or [None])[-1])
    if timeout is None or timeout < 900:
        problems.append("snarkflow-gpu-worker@.service: TimeoutStartSec under 900 s: a 32 GiB preload and "
                        "digest check outlast it and systemd kills the worker")
    synth_unit = units.get("snarkflow-synth-worker.service", [])
    if "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" not in values(synth_unit, "Environment"):
        problems.append("snarkflow-synth-worker.service: no Environment=GLIBC_TUNABLES=glibc.malloc.hugetlb=1: "
                        "its witness buffers get 4 KiB pages (about half the native witness's time faulting them in)")
    synth = env_file("synth-worker.env") or {}
    if "SNARKFLOW_STATUS_LISTEN" not in synth:
        problems.append("synth-worker.env: no SNARKFLOW_STATUS_LISTEN (no /metrics, no /readyz)")
    ports = {}
    per_gpu = sorted(UNITS.glob("gpu-worker@*.env"))
    if not per_gpu:
        problems.append("no gpu-worker@<index>.env example: each instance needs its own status port")
    for path in per_gpu:
        listen = env_file(path.name).get("SNARKFLOW_STATUS_LISTEN")
        if not listen:
            problems.append(f"{path.name}: no SNARKFLOW_STATUS_LISTEN (no /metrics, no /readyz)")
        else:
            ports.setdefault(listen.rsplit(":", 1)[-1], []).append(path.name)
    for port, names in ports.items():
        if len(names) > 1:
            problems.append(f"{', '.join(names)} share the status port {port}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"check-systemd: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"check-systemd: {len(units)} units: credentials, users, paths, timeouts and status ports as the recipe needs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
