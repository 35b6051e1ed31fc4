#!/usr/bin/env python3
"""Summarise an Nsight Compute CSV of kernel durations (`ncu --metrics gpu__time_duration.sum
--csv --print-units base`) for one resident prove: the kernels from the first 0/1 split on (the
parameter upload's conversion kernels before it are left out), summed by kernel and by stream.

usage: ncu-summary.py NCU_CSV
"""
import csv
import re
import sys
from collections import defaultdict


def short(name):
    """`void accumulate<bucket_t, ...>(...)` -> `accumulate`; NTT kernels keep their own names."""
    name = re.sub(r"\(.*$", "", name.strip())
    name = re.sub(r"<.*$", "", name)
    return name.split()[-1] if name.split() else name


def main(path):
    rows = []
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(unit, 1e-6)
        rows.append((int(row["ID"]), short(row["Kernel Name"]), row.get("Stream", "?"), value * scale))
    rows.sort()
    first = next((i for i, r in enumerate(rows) if r[1] == "split_lists"), None)
    if first is None:
        print(f"{len(rows)} kernels, no split_lists among them: not a resident prove")
        return 1
    prove = rows[first:]
    total = sum(r[3] for r in prove)
    by_name, count, by_stream = defaultdict(float), defaultdict(int), defaultdict(float)
    for _, name, stream, ms in prove:
        by_name[name] += ms
        count[name] += 1
        by_stream[stream] += ms
    print(f"KERNELS {len(prove)} launches of the prove, {total:.1f} ms of device time summed "
          f"(each kernel alone; {first} launches before it left out)")
    for name, ms in sorted(by_name.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<28} {ms:9.1f} ms  {100 * ms / total:5.1f} %  {count[name]:5d} launches")
    print("by stream:", ", ".join(f"{s} {ms:.1f} ms" for s, ms in sorted(by_stream.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
