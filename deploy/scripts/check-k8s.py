"""Check the Kubernetes manifests (deploy/k8s): render every overlay with `kubectl kustomize`,
validate each core resource strictly against the Kubernetes schemas (kubernetes-validate;
unknown fields fail), check the KEDA ScaledObjects' shape (KEDA's CRD schema is not
reachable offline: the fields KEDA 2.12+ requires, a target that exists, triggers that name
metrics the gateway exports), and that the NATS permissions copy equals deploy/nats's.
Run by deploy/scripts/check-k8s.sh (which makes the virtual environment)."""
import pathlib
import re
import subprocess
import sys

import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy/k8s"
KUBERNETES = "1.30.0"


def render(overlay):
    out = subprocess.run(["kubectl", "kustomize", str(overlay)], check=True, capture_output=True, text=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def exported_metrics():
    names = set()
    for path in (ROOT / "crates").rglob("*.rs"):
        names.update(re.findall(r'"(snarkflow_[a-z_]+)"', path.read_text()))
    return names


def check_scaled_object(obj, docs, metrics):
    problems = []
    name = obj["metadata"]["name"]
    spec = obj.get("spec", {})
    target = spec.get("scaleTargetRef", {}).get("name")
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    if ("Deployment", target) not in kinds and ("StatefulSet", target) not in kinds:
        problems.append(f"ScaledObject {name}: scales {target!r}, which the manifests do not define")
    for key in ("minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod"):
        if key in spec and not isinstance(spec[key], int):
            problems.append(f"ScaledObject {name}: {key} must be an integer")
    bounds = (spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100))
    if all(isinstance(b, int) for b in bounds) and bounds[0] > bounds[1]:
        problems.append(f"ScaledObject {name}: minReplicaCount above maxReplicaCount")
    known = {"apiVersion", "kind", "metadata", "spec"}
    if set(obj) - known:
        problems.append(f"ScaledObject {name}: unknown top-level fields {sorted(set(obj) - known)}")
    spec_fields = {"scaleTargetRef", "minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod",
                   "idleReplicaCount", "fallback", "advanced", "triggers", "initialCooldownPeriod"}
    if set(spec) - spec_fields:
        problems.append(f"ScaledObject {name}: unknown spec fields {sorted(set(spec) - spec_fields)}")
    triggers = spec.get("triggers") or []
    if not triggers:
        problems.append(f"ScaledObject {name}: no triggers")
    for t in triggers:
        meta = t.get("metadata", {})
        if not t.get("type") or not isinstance(meta, dict):
            problems.append(f"ScaledObject {name}: a trigger needs a type and metadata")
            continue
        if any(not isinstance(v, str) for v in meta.values()):
            problems.append(f"ScaledObject {name}: trigger metadata values must be strings (KEDA reads them so)")
        if t["type"] == "prometheus":
            for key in ("serverAddress", "query", "threshold"):
                if key not in meta:
                    problems.append(f"ScaledObject {name}: prometheus trigger without {key}")
            for metric in re.findall(r"snarkflow_[a-z_]+", meta.get("query", "")):
                if metric not in metrics:
                    problems.append(f"ScaledObject {name}: the query names {metric}, which no service exports")
    return problems


def main():
    problems = []
    copy, source = K8S / "base/nats/permissions.conf", ROOT / "deploy/nats/permissions.conf"
    if copy.read_bytes() != source.read_bytes():
        problems.append(f"{copy.relative_to(ROOT)} differs from {source.relative_to(ROOT)}: copy it again")
    metrics = exported_metrics()
    overlays = sorted(p for p in (K8S / "overlays").iterdir() if p.is_dir())
    checked = 0
    for overlay in overlays:
        docs = render(overlay)
        for doc in docs:
            where = f"{overlay.name}: {doc['kind']} {doc['metadata']['name']}"
            checked += 1
            if doc["kind"] == "ScaledObject":
                problems += [f"{overlay.name}: {p}" for p in check_scaled_object(doc, docs, metrics)]
                continue
            try:
                kubernetes_validate.validate(doc, KUBERNETES, strict=True)
            except kubernetes_validate.ValidationError as e:
                problems.append(f"{where}: {e.message} at {'/'.join(str(p) for p in e.path)}")
            except Exception as e:
                problems.append(f"{where}: {e}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"check-k8s: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"check-k8s: {len(overlays)} overlays, {checked} resources valid (Kubernetes {KUBERNETES}, strict)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
