#!/usr/bin/env python3
"""lamina-inspect as a user meets it: help, version, text output, bad input.

Usage: inspect_cli_check.py LAMINA_INSPECT MODEL.gguf
"""
import os
import subprocess
import sys
import tempfile


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


def main():
    inspect, model = sys.argv[1:]
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    r = run(inspect, "--help")
    expect(r.returncode == 0 and "--json" in r.stdout, "--help prints usage and exits 0")
    r = run(inspect, "--version")
    expect(r.returncode == 0 and r.stdout.startswith("lamina-inspect "), "--version")
    r = run(inspect)
    expect(r.returncode != 0 and r.stderr, "missing FILE is an error")
    r = run(inspect, model, "--no-such-flag")
    expect(r.returncode != 0 and r.stderr, "unknown flag is an error")

    r = run(inspect, model)
    expect(r.returncode == 0, "text report exits 0")
    for needle in ("GGUF version 3", "architecture: llama", "block count", "tokenizer: \"llama\", 512 tokens",
                   "blk.4.ffn_norm.weight", "totals: "):
        expect(needle in r.stdout, f"text report shows {needle!r}")
    expect("... (512 items)" in r.stdout, "long arrays are shortened")
    r = run(inspect, model, "--full")
    expect("... (512 items)" not in r.stdout and "<0xFF>" in r.stdout, "--full prints arrays whole")

    with open(model, "rb") as f:
        data = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "truncated.gguf": data[:5000],
            "badmagic.gguf": b"GGUG" + data[4:],
            "empty.gguf": b"",
        }
        for name, content in cases.items():
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(content)
            r = run(inspect, path)
            lines = r.stderr.strip().splitlines()
            expect(r.returncode == 1 and len(lines) == 1 and name in lines[0] and "offset" in lines[0],
                   f"{name}: exit 1 with one stderr line naming file and offset (got {r.returncode}: {r.stderr!r})")
        r = run(inspect, os.path.join(tmp, "missing.gguf"))
        expect(r.returncode == 1 and "missing.gguf" in r.stderr, "missing file")
        r = run(inspect, tmp)
        expect(r.returncode == 1 and "not a regular file" in r.stderr, "a directory")

    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
