"""Check deploy/prometheus/alerts.yml: every rule well formed, every expression valid PromQL
(promql-parser, the Rust parser's Python binding), every metric it names one the services
export (found in the sources: no build needed), every label it matches one that metric has.
The same for every query of the Grafana dashboards (deploy/grafana); and the scrape
configurations (prometheus.yml, fleet.yml, kubernetes.yml, targets/) parse.
Run by deploy/scripts/check-alerts.sh (which makes the virtual environment)."""
import json
import pathlib
import re
import sys

import promql_parser as promql
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus/alerts.yml"
DASHBOARDS = ROOT / "deploy/grafana"

# snarkflow_<lane>_... metrics are registered per stage (crates/runtime/src/host.rs)
LANES = ("synth", "prove")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def exported_metrics():
    """Metric name -> label names, read from the Rust sources' registrations."""
    found = {}
    for path in (ROOT / "crates").rglob("*.rs"):
        text = path.read_text()
        # the label list of a registration: the first `&[...]` after the name, before the next
        # statement or the next metric name (a label-less metric must not take the next one's)
        for m in re.finditer(r'"(snarkflow_(?:\{lane\}_)?[a-z_]+)"(?:(?!"snarkflow_)[^;])*?&\[([^\]]*)\]', text, re.S):
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


def check_expr(name, text, metrics):
    """Problems of one PromQL expression: not PromQL, or a metric or label no service exports."""
    try:
        expr = promql.parse(text)
    except Exception as e:  # the parser's own message says where
        return [f"{name}: not PromQL: {e}"]
    problems = []
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
    return problems


def check_dashboards(metrics):
    """Every Grafana panel query (deploy/grafana) over exported metrics and labels."""
    problems, count = [], 0
    for path in sorted(DASHBOARDS.glob("*.json")):
        for panel in json.loads(path.read_text()).get("panels", []):
            for target in panel.get("targets", []):
                count += 1
                name = f"{path.name}: panel {panel.get('title')!r}"
                problems += check_expr(name, target.get("expr", ""), metrics)
    return problems, count


def check_scrape_configs():
    """The Prometheus configurations parse and load alerts.yml; file_sd examples are target lists."""
    problems = []
    for path in sorted(RULES.parent.glob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        if path == RULES:
            continue
        if "alerts.yml" not in doc.get("rule_files", []) or not doc.get("scrape_configs"):
            problems.append(f"{path.name}: a scrape configuration loads alerts.yml and scrapes something")
    for path in sorted((RULES.parent / "targets").glob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, list) or not all(isinstance(g.get("targets"), list) for g in doc):
            problems.append(f"targets/{path.name}: not a file_sd list of target groups")
    return problems


def check_post_coverage(rules):
    """PoSt is watched on the chain's clock: a WindowPoSt failure alerts, and some WinningPoSt
    rule fires within its 30 s epoch (a `for` of at most 30 s, in a group evaluated often enough)."""
    problems = []
    if not any('kind="window-post"' in r.get("expr", "") and 'state="failed"' in r.get("expr", "") for _, r in rules):
        problems.append("no alert on a failed WindowPoSt (kind=\"window-post\", state=\"failed\")")
    def seconds(text):
        m = re.fullmatch(r"(\d+)(s|m)", str(text))
        return int(m.group(1)) * (60 if m.group(2) == "m" else 1) if m else None
    epoch = [r for g, r in rules if 'kind="winning-post"' in r.get("expr", "") and "for" in r
             and seconds(r["for"]) is not None and seconds(r["for"]) <= 30 and (seconds(g.get("interval", "1m")) or 60) <= 15]
    if not epoch:
        problems.append("no WinningPoSt alert within its 30 s epoch (a rule on kind=\"winning-post\" with "
                        "`for` <= 30s in a group with `interval` <= 15s)")
    return problems


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
            problems += check_expr(name, rule.get("expr", ""), metrics)
    problems += check_post_coverage([(g, r) for g in doc.get("groups", []) for r in g.get("rules", [])])
    panel_problems, panels = check_dashboards(metrics)
    problems += panel_problems + check_scrape_configs()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"check-alerts: {len(problems)} problems in deploy/prometheus or deploy/grafana", file=sys.stderr)
        return 1
    print(f"check-alerts: {count} rules and {panels} dashboard queries parse, and every metric and label they use is exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
