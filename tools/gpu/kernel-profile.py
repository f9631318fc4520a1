#!/usr/bin/env python3
"""Per-kernel time from Nsight Compute CSVs, grouped by kernel name.

  ncu --clock-control none --metrics gpu__time_duration.sum --csv PROGRAM ... > run.csv
  kernel-profile.py run.csv [--minus base.csv] [--after N:REGEX] [--per N] [--top K]

Prints a markdown table: kernel, launches, total microseconds and share.
--minus subtracts a shorter run of the same program (e.g. 6 decode steps
minus 2 leaves 4 steps), --after starts at the N-th launch whose name matches
REGEX (e.g. 2:gather_rows skips a first prefill), --per divides by the
number of runs left (prefills, steps). Names are shortened to the function
and its first template argument, so one engine's kernels compare with
another's.
"""
import argparse, csv, collections, re, sys

UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}


def short_name(name):
    name = re.sub(r"\(.*\)$", "", name.strip())  # argument list
    base, _, args = name.partition("<")
    base = base.split("::")[-1].replace("void ", "").strip()
    if not args:
        return base
    first = re.split(r"[,>]", args, maxsplit=1)[0].split("::")[-1].strip()
    return f"{base}<{first}>"


def launches(path, after=None):
    """(short name, microseconds) of each launch in the file, in order."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not quoted
    out = []
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = row["Metric Unit"]
        if unit not in UNITS:
            sys.exit(f"{path}: unknown time unit {unit!r}")
        out.append((row["Kernel Name"], float(row["Metric Value"].replace(",", "")) * UNITS[unit]))
    if after:
        n, regex = after.split(":", 1)
        hits = [i for i, (k, _) in enumerate(out) if re.search(regex, k)]
        if len(hits) < int(n):
            sys.exit(f"{path}: fewer than {n} launches match {regex!r}")
        out = out[hits[int(n) - 1]:]
    return [(short_name(k), us) for k, us in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--minus", help="subtract this run's launches")
    ap.add_argument("--after", help="N:REGEX, start at the N-th launch matching REGEX")
    ap.add_argument("--per", type=float, default=1.0, help="divide totals by this (runs left)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    total, count = collections.Counter(), collections.Counter()
    for k, us in launches(a.csv, a.after):
        total[k] += us
        count[k] += 1
    if a.minus:
        for k, us in launches(a.minus, a.after):
            total[k] -= us
            count[k] -= 1
    total = collections.Counter({k: v for k, v in total.items() if count[k] > 0})
    if not total:
        sys.exit("no kernel launches left")
    whole = sum(total.values())
    print("| kernel | launches | us | share |\n|---|---:|---:|---:|")
    for k, us in total.most_common(a.top):
        print(f"| {k} | {count[k] / a.per:g} | {us / a.per:,.1f} | {100 * us / whole:.1f}% |")
    rest = whole - sum(us for _, us in total.most_common(a.top))
    if rest > 0:
        print(f"| (others) | | {rest / a.per:,.1f} | {100 * rest / whole:.1f}% |")
    print(f"| **all** | {sum(count[k] for k in total) / a.per:g} | {whole / a.per:,.1f} | |")


if __name__ == "__main__":
    main()
