"""Check deploy/prometheus/alerts.yml: every rule well formed, every expression valid PromQL
(promql-parser, the Rust parser's Python binding), every metric it names one the services
export (found in the sources), every label it matches one that metric has.
Run by deploy/scripts/check-alerts.sh (which makes the virtual environment)."""
import pathlib
import re
import sys

import promql_parser as promql
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus/alerts.yml"

# snarkflow_<lane>_... metrics are registered per stage (crates/runtime/src/host.rs)
LANES = ("synth", "prove")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def exported_metrics():
    """Metric name -> label names, read from the Rust sources' registrations."""
    found = {}
    for path in (ROOT / "crates").rglob("*.rs"):
        text = path.read_text()
        for m in re.finditer(r'"(snarkflow_(?:\{lane\}_)?[a-z_]+)"[^;]*?&\[([^\]]*)\]', text, re.S):
            name, labels = m.group(1), re.findall(r'"([a-z_]+)"', m.group(2))
            names = [name.replace("{lane}", lane) for lane in LANES] if "{lane}" in name else [name]
            for n in names:
                found.setdefault(n, set()).update(labels)
        for m in re.finditer(r'"(snarkflow_(?:\{lane\}_)?[a-z_]+)"', text):
            name = m.group(1)
            for n in ([name.replace("{lane}", lane) for lane in LANES] if "{lane}" in name else [name]):
                found.setdefault(n, set())
    return found


def selectors(expr):
    out = []

    def visit(node):
        if isinstance(node, promql.VectorSelector):
            out.append((node.name, [m.name for m in node.matchers.matchers]))
        return True

    promql.walk(expr, visit)
    return out


def main():
    doc = yaml.safe_load(RULES.read_text())
    metrics = exported_metrics()
    problems, count = [], 0
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            count += 1
            name = rule.get("alert", "<unnamed>")
            for key in ("alert", "expr", "labels", "annotations"):
                if key not in rule:
                    problems.append(f"{name}: no {key}")
            if "severity" not in rule.get("labels", {}):
                problems.append(f"{name}: no severity label")
            if not {"summary", "description"} <= set(rule.get("annotations", {})):
                problems.append(f"{name}: annotations need a summary and a description")
            try:
                expr = promql.parse(rule.get("expr", ""))
            except Exception as e:  # the parser's own message says where
                problems.append(f"{name}: not PromQL: {e}")
                continue
            for metric, labels in selectors(expr):
                base = metric
                for suffix in HISTOGRAM_SUFFIXES:
                    if metric.endswith(suffix) and metric[: -len(suffix)] in metrics:
                        base = metric[: -len(suffix)]
                if base not in metrics:
                    problems.append(f"{name}: no service exports {metric}")
                    continue
                known = metrics[base] | {"instance", "job", "le", "__name__"}
                for label in labels:
                    if label not in known:
                        problems.append(f"{name}: {base} has no label {label!r} (it has {sorted(metrics[base])})")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"check-alerts: {len(problems)} problems in {RULES.relative_to(ROOT)}", file=sys.stderr)
        return 1
    print(f"check-alerts: {count} rules parse, and every metric and label they use is exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
