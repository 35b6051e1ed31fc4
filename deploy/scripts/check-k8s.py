"""Check the Kubernetes manifests (deploy/k8s): render every overlay with `kubectl kustomize`,
validate each core resource strictly against the Kubernetes schemas (kubernetes-validate;
unknown fields fail), check the KEDA ScaledObjects' shape (KEDA's CRD schema is not
reachable offline: the fields KEDA 2.12+ requires, a target that exists, triggers that name
metrics the gateway exports and survive their absence), and that the NATS permissions copy
equals deploy/nats's. Then what the rendered manifests expose (issue 39):
  - every NATS configuration (the rendered ConfigMaps, and deploy/nats/*.conf for the systemd
    fleet) with a `cluster` block authenticates its routes (authorization with a user and
    password, or a token) and runs them over TLS with a CA; a server listening beyond loopback
    in Kubernetes has client TLS;
  - every namespace denies ingress by default (a NetworkPolicy selecting every pod with no
    ingress rule), NATS's client port is open to the service roles only, its route port to NATS
    pods only, its monitoring port and the workers' status ports to selected pods only;
  - no Service publishes NATS's monitoring port; every pod runs as non-root without a
    service-account token, with images pinned to a tag that is not `latest`;
  - every worker serves its status port (SNARKFLOW_STATUS_LISTEN) and is annotated for
    Prometheus on it; a synth-worker's malloc asks for huge pages (GLIBC_TUNABLES); the PoSt pool, where PodDisruptionBudgets exist, is two pods on two nodes
    with a budget.
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
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
NAME = "app.kubernetes.io/name"
ROLES = {"gateway", "synth-worker", "gpu-worker"}
NATS_PORTS = {"client": 4222, "cluster": 6222, "monitor": 8222}


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
            query = meta.get("query", "")
            for metric in re.findall(r"snarkflow_[a-z_]+", query):
                if metric not in metrics:
                    problems.append(f"ScaledObject {name}: the query names {metric}, which no service exports")
            # a gateway not scraped yet must read as no work, not as an error or no answer
            if not re.search(r"\bor\s+vector\(", query) or meta.get("ignoreNullValues", "true") != "true":
                problems.append(f"ScaledObject {name}: the query must survive an absent metric "
                                "(`... or vector(0)`, ignoreNullValues not false)")
    return problems


# --- NATS configuration -------------------------------------------------------------------

def strip_comments(text):
    return "\n".join(re.sub(r"(#|//).*$", "", line) for line in text.splitlines())


def depth_at(text, index):
    return text.count("{", 0, index) - text.count("}", 0, index)


def block(text, name):
    """The inside of the first `name { ... }` (or `name: {`) at the outermost level of text."""
    for m in re.finditer(r"(?<![\w$])" + re.escape(name) + r"\s*[:=]?\s*\{", text):
        if depth_at(text, m.start()) == 0:
            level = 1
            for i in range(m.end(), len(text)):
                level += {"{": 1, "}": -1}.get(text[i], 0)
                if level == 0:
                    return text[m.end():i]
            return text[m.end():]
    return None


def top_level(text):
    """text without the insides of its blocks."""
    out, level = [], 0
    for ch in text:
        if ch == "}":
            level -= 1
        if level == 0:
            out.append(ch)
        if ch == "{":
            level += 1
    return "".join(out)


def field(text, key):
    m = re.search(r"(?m)^\s*" + re.escape(key) + r"\s*[:=]?\s*(\S+)", text or "")
    return m.group(1).strip("\"'") if m else None


def check_nats_conf(where, text, require_client_tls):
    problems = []
    conf = strip_comments(text)
    cluster = block(conf, "cluster")
    if cluster is not None:
        auth = block(cluster, "authorization")
        if auth is None or not ((field(auth, "user") and field(auth, "password")) or field(auth, "token")):
            problems.append(f"{where}: the cluster block has no route authorization (user and password): "
                            "anyone reaching the route port joins as a server")
        tls = block(cluster, "tls")
        if tls is None or not all(field(tls, k) for k in ("cert_file", "key_file", "ca_file")):
            problems.append(f"{where}: the cluster block has no route TLS with cert_file, key_file and ca_file")
        elif field(tls, "verify") == "false":
            problems.append(f"{where}: route TLS must verify the other server's certificate")
    listen = field(top_level(conf), "listen") or "0.0.0.0:4222"
    loopback = listen.startswith(("127.", "localhost", "[::1]"))
    if require_client_tls and not loopback and block(conf, "tls") is None:
        problems.append(f"{where}: NATS listens on {listen} without client TLS (passwords in clear)")
    return problems


def check_nats_configs(overlay, docs):
    problems = []
    for doc in docs:
        if doc["kind"] == "ConfigMap" and "nats.conf" in (doc.get("data") or {}):
            where = f"{overlay.name}: ConfigMap {doc['metadata']['name']} nats.conf"
            problems += check_nats_conf(where, doc["data"]["nats.conf"], require_client_tls=True)
    return problems


# --- NetworkPolicies ----------------------------------------------------------------------

def selects(selector, labels):
    """Does a Kubernetes label selector (None: nothing) match labels?"""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def pod_templates(docs):
    for doc in docs:
        if doc["kind"] in WORKLOADS:
            yield doc, doc["spec"]["template"]


def rules_for(policies, labels, port, port_name):
    """The `from` lists of every ingress rule that lets a connection reach port on pods with labels."""
    for policy in policies:
        spec = policy["spec"]
        if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]) or not selects(spec.get("podSelector"), labels):
            continue
        for rule in spec.get("ingress") or []:
            ports = rule.get("ports") or []
            if not ports or any(p.get("port") in (port, port_name) for p in ports):
                yield rule.get("from")


def check_peers(where, peers, allowed_pods, pods):
    """peers may only name pods in this namespace whose labels allowed_pods accepts."""
    if not peers:
        return [f"{where}: open to anyone"]
    problems = []
    for peer in peers:
        if "ipBlock" in peer:
            problems.append(f"{where}: open to an address block")
        selector = peer.get("podSelector")
        if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            problems.append(f"{where}: open to every pod{' of the selected namespaces' if 'namespaceSelector' in peer else ''}")
            continue
        if "namespaceSelector" not in peer:
            wrong = sorted({name for name, labels in pods if selects(selector, labels) and not allowed_pods(labels)})
            if wrong:
                problems.append(f"{where}: open to {', '.join(wrong)}")
    return problems


def denies_by_default(policy):
    """A policy selecting every pod of its namespace that allows no ingress."""
    spec = policy["spec"]
    selector = spec.get("podSelector") or {}
    return (not selector.get("matchLabels") and not selector.get("matchExpressions")
            and "Ingress" in (spec.get("policyTypes") or []) and not spec.get("ingress"))


def check_network_policies(overlay, docs):
    problems = []
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    pods = [(w["metadata"]["name"], t["metadata"].get("labels") or {}) for w, t in pod_templates(docs)]
    namespaces = {d["metadata"].get("namespace", "default") for d in docs if d["kind"] in WORKLOADS}
    for ns in sorted(namespaces):
        if not any(p["metadata"].get("namespace", "default") == ns and denies_by_default(p) for p in policies):
            problems.append(f"{overlay.name}: namespace {ns} has no default-deny ingress NetworkPolicy")
    nats = [labels for _, labels in pods if labels.get(NAME) == "nats"]
    for labels in nats[:1]:
        for port_name, port in NATS_PORTS.items():
            where = f"{overlay.name}: NATS port {port} ({port_name})"
            allowed = {"client": lambda l: l.get(NAME) in ROLES,
                       "cluster": lambda l: l.get(NAME) == "nats",
                       "monitor": lambda l: False}[port_name]
            for peers in rules_for(policies, labels, port, port_name):
                found = check_peers(where, peers, allowed, pods)
                if port_name != "monitor" and any("namespaceSelector" in p for p in peers or []):
                    found.append(f"{where}: open to pods of other namespaces")
                problems += found
    for name, labels in pods:
        if labels.get(NAME) in ("synth-worker", "gpu-worker"):
            for port in (9101, 9102):
                for peers in rules_for(policies, labels, port, "status"):
                    problems += check_peers(f"{overlay.name}: {name} status port {port}", peers, lambda l: False, pods)
    return problems


# --- pods: root, tokens, images, status ports, the PoSt pool ------------------------------

def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def check_pods(overlay, docs):
    problems = []
    for doc in docs:
        if doc["kind"] == "Service":
            for port in doc["spec"].get("ports") or []:
                if port.get("port") == 8222 or port.get("targetPort") in (8222, "monitor"):
                    problems.append(f"{overlay.name}: Service {doc['metadata']['name']} publishes NATS monitoring (8222)")
    for workload, template in pod_templates(docs):
        where = f"{overlay.name}: {workload['kind']} {workload['metadata']['name']}"
        spec = template["spec"]
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{where}: mounts a service-account token (automountServiceAccountToken: false)")
        pod_nonroot = (spec.get("securityContext") or {}).get("runAsNonRoot") is True
        annotations = template["metadata"].get("annotations") or {}
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            if not pod_nonroot and (c.get("securityContext") or {}).get("runAsNonRoot") is not True:
                problems.append(f"{where}: container {c['name']} may run as root (runAsNonRoot)")
            image = c.get("image", "")
            tag = image.rsplit("/", 1)[-1].partition(":")[2]
            if "@sha256:" not in image and (not tag or tag == "latest"):
                problems.append(f"{where}: image {image!r} is not pinned to a version tag")
            command = (c.get("command") or [""])[0]
            if command in ("synth-worker", "gpu-worker"):
                listen = env_of(c).get("SNARKFLOW_STATUS_LISTEN")
                if not listen:
                    problems.append(f"{where}: no SNARKFLOW_STATUS_LISTEN: /metrics and /readyz are not served")
                elif annotations.get("prometheus.io/scrape") != "true" or \
                        annotations.get("prometheus.io/port") != listen.rsplit(":", 1)[-1]:
                    problems.append(f"{where}: not annotated for Prometheus on its status port {listen}")
            if command == "synth-worker" and env_of(c).get("GLIBC_TUNABLES") != "glibc.malloc.hugetlb=1":
                problems.append(f"{where}: no GLIBC_TUNABLES=glibc.malloc.hugetlb=1: the witness buffers get 4 KiB pages")
            if command == "gateway" and annotations.get("prometheus.io/scrape") != "true":
                problems.append(f"{where}: not annotated for Prometheus")
    return problems + check_post_pool(overlay, docs)


def check_post_pool(overlay, docs):
    """Where the overlay keeps PodDisruptionBudgets (production), the PoSt pool is two pods
    that never share a node, and a budget keeps one."""
    budgets = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    if not budgets:
        return []
    problems = []
    for workload, template in pod_templates(docs):
        labels = template["metadata"].get("labels") or {}
        if labels.get("snarkflow.io/pool") != "post":
            continue
        where = f"{overlay.name}: PoSt pool {workload['metadata']['name']}"
        if workload["spec"].get("replicas", 1) < 2:
            problems.append(f"{where}: fewer than two replicas")
        terms = (((template["spec"].get("affinity") or {}).get("podAntiAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        if not any(t.get("topologyKey") == "kubernetes.io/hostname" and selects(t.get("labelSelector"), labels)
                   for t in terms):
            problems.append(f"{where}: no required pod anti-affinity on kubernetes.io/hostname")
        if not any(selects(b["spec"].get("selector"), labels) for b in budgets):
            problems.append(f"{where}: no PodDisruptionBudget")
    return problems


def main():
    problems = []
    copy, source = K8S / "base/nats/permissions.conf", ROOT / "deploy/nats/permissions.conf"
    if copy.read_bytes() != source.read_bytes():
        problems.append(f"{copy.relative_to(ROOT)} differs from {source.relative_to(ROOT)}: copy it again")
    for conf in sorted((ROOT / "deploy/nats").glob("*.conf")):
        problems += check_nats_conf(str(conf.relative_to(ROOT)), conf.read_text(), require_client_tls=False)
    metrics = exported_metrics()
    overlays = sorted(p for p in (K8S / "overlays").iterdir() if p.is_dir())
    checked = 0
    for overlay in overlays:
        docs = render(overlay)
        problems += check_nats_configs(overlay, docs)
        problems += check_network_policies(overlay, docs)
        problems += check_pods(overlay, docs)
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
    print(f"check-k8s: {len(overlays)} overlays, {checked} resources valid (Kubernetes {KUBERNETES}, strict), "
          "NATS routes authenticated over TLS, ingress denied by default, pods non-root without tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
