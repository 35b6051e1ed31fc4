#!/usr/bin/env bash
# Check the Kubernetes manifests (deploy/k8s): every overlay rendered by kubectl's kustomize
# and validated (deploy/scripts/check-k8s.py). The virtual environment (PyPI:
# kubernetes-validate, PyYAML) is cached. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v kubectl >/dev/null && command -v apt-get >/dev/null; then
    # the Debian package this machine kind has; quiet and best effort
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl >/dev/null 2>&1 \
        || { sudo -n true 2>/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl >/dev/null; } || true
fi
command -v kubectl >/dev/null || { echo "check-k8s: kubectl is missing (it renders the kustomizations)" >&2; exit 1; }
venv="${SNARKFLOW_CACHE:-$HOME/.cache/snarkflow}/k8s-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import kubernetes_validate, yaml" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "kubernetes-validate==1.37.0" "PyYAML>=6"
fi
"$venv/bin/python" deploy/scripts/check-k8s.py
