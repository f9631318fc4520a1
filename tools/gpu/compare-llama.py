#!/usr/bin/env python3
"""Lamina against llama.cpp on the GPU, on the same GGUF files, in one run.

  compare-llama.py --lamina BUNDLE/lamina-bench --llama LLAMA_BIN_DIR [--tests pp,depth,seq] FILE...

For each file, interleaved (Lamina, then llama.cpp):
  pp   pp512, pp2048 and tg128 (lamina-bench / llama-bench -fa 1 -ngl 99)
  depth  tg128 after 4096 tokens of context (-d 4096 on both)
  seq  aggregate decode of 8, 32 and 64 sequences with 16-token prompts and 64
       generated tokens each (lamina-bench --sequences / llama-batched-bench
       -npp 16 -ntg 64 -npl 8,32,64, its S_TG)
--lamina-args and --llama-args add flags to every run of each (e.g. "--split-mode layer"
and "-sm layer" to compare layers split over the visible GPUs).
Steady state: the mean of repetitions 2..r (the first pays for graph capture).
Prints a markdown table of tok/s and ratios; --raw FILE keeps every output.
"""
import argparse, json, os, re, statistics, subprocess, sys


def steady(samples):
    return statistics.mean(samples[1:] if len(samples) > 1 else samples)


def run(cmd, raw):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900)
    if raw:
        raw.write("$ " + " ".join(cmd) + "\n" + out.stdout + "\n")
        raw.flush()
    return out.stdout


def lamina(exe, f, args, raw):
    d = json.loads(run([exe, "-m", f, "--device", "cuda", "--no-parity-check", "-o", "json"] + args, raw))
    return {x["test"]: steady([x["n_tokens"] / s for s in x["seconds"]]) for x in d["results"]}


def llama_bench(exe, f, args, raw):
    d = json.loads(run([exe, "-m", f, "-ngl", "99", "-fa", "1", "-o", "json"] + args, raw))
    out = {}
    for x in d:
        test = f"pp{x['n_prompt']}" if x["n_gen"] == 0 else f"tg{x['n_gen']}"
        if x.get("n_depth", 0):
            test += f"@d{x['n_depth']}"
        out[test] = steady(x.get("samples_ts") or [x["avg_ts"]])
    return out


def llama_batched(exe, f, npl, raw, extra=()):
    # llama-batched-bench spells the split mode like llama-bench.
    text = run([exe, "-m", f, "-ngl", "99", "-fa", "on", "-c", "8192", "-b", "2048", "-ub", "512",
                "-npp", "16", "-ntg", "64", "-npl", ",".join(map(str, npl))] + list(extra), raw)
    out = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) >= 8 and cols[0] == "16" and cols[1] == "64" and cols[2].isdigit():
            out[f"tg64@s{cols[2]}"] = float(cols[7])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lamina", required=True)
    ap.add_argument("--llama", required=True, help="folder with llama-bench and llama-batched-bench")
    ap.add_argument("--tests", default="pp,depth,seq")
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--raw")
    ap.add_argument("--lamina-args", default="", help="extra lamina-bench flags, one string")
    ap.add_argument("--llama-args", default="", help="extra llama-bench flags, one string")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    raw = open(a.raw, "a") if a.raw else None
    tests = a.tests.split(",")
    extra_ours, extra_theirs = a.lamina_args.split(), a.llama_args.split()
    rows = []
    for f in a.files:
        name = os.path.basename(f)
        pairs = []
        if "pp" in tests:
            ours = lamina(a.lamina, f, ["-p", "512,2048", "-n", "128", "-r", str(a.r)] + extra_ours, raw)
            theirs = llama_bench(os.path.join(a.llama, "llama-bench"), f,
                                 ["-p", "512,2048", "-n", "128", "-r", str(a.r)] + extra_theirs, raw)
            pairs.append((ours, theirs))
        if "depth" in tests:
            ours = lamina(a.lamina, f, ["-p", "0", "-n", "128", "-d", "4096", "-r", "2"] + extra_ours, raw)
            theirs = llama_bench(os.path.join(a.llama, "llama-bench"), f,
                                 ["-p", "0", "-n", "128", "-d", "4096", "-r", "2"] + extra_theirs, raw)
            pairs.append((ours, theirs))
        if "seq" in tests:
            ours = lamina(a.lamina, f, ["-p", "0", "-n", "0", "--sequences", "8,32,64", "-r", "2"] + extra_ours, raw)
            theirs = llama_batched(os.path.join(a.llama, "llama-batched-bench"), f, [8, 32, 64], raw, extra_theirs)
            pairs.append((ours, theirs))
        for ours, theirs in pairs:
            for test in sorted(set(ours) & set(theirs)):
                rows.append((name, test, ours[test], theirs[test]))
        print(f"done {name}", file=sys.stderr, flush=True)
    print("| file | test | Lamina tok/s | llama.cpp tok/s | Lamina / llama.cpp |")
    print("|---|---|---:|---:|---:|")
    for name, test, o, t in rows:
        print(f"| {name} | {test} | {o:,.1f} | {t:,.1f} | {o / t:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
