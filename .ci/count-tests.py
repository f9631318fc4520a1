#!/usr/bin/env python3
"""Counts test cases in meson's JUnit logs (each gtest case counts once).

Usage: count-tests.py LABEL=testlog.junit.xml [...]
Prints one line per log and the closing line `tests: N passed, N failed, N skipped`.
Exits 1 if any case failed or a log is missing.
"""
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(args):
    total = [0, 0, 0]
    ok = True
    for arg in args:
        label, _, path = arg.partition("=")
        try:
            p, f, s = count(path)
        except (OSError, ET.ParseError) as e:
            print(f"{label}: cannot read {path}: {e}")
            ok = False
            continue
        print(f"{label}: {p} passed, {f} failed, {s} skipped")
        for i, n in enumerate((p, f, s)):
            total[i] += n
    print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 0 if ok and total[1] == 0 and total[0] > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
