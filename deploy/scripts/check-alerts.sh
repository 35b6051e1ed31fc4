#!/usr/bin/env bash
# Check the Prometheus alert rules (deploy/prometheus/alerts.yml) with a PromQL parser and
# against the metrics the services export; the virtual environment (PyPI: promql-parser,
# PyYAML) is cached. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${SNARKFLOW_CACHE:-$HOME/.cache/snarkflow}/alerts-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import promql_parser, yaml" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "promql-parser==0.12.0" "PyYAML>=6"
fi
"$venv/bin/python" deploy/scripts/check-alerts.py
