#!/usr/bin/env python3
"""Checks `lamina-inspect --json` against an independent GGUF reader.

This reader is deliberately separate from libgguf (plain struct unpacking, no
shared code), so the two can only agree if both read the format right.
Usage: inspect_json_check.py LAMINA_INSPECT TESTDATA_DIR [EXTRA_FILE ...]
Exit 77 (skip) when the test data folder is absent.
"""
import json
import math
import os
import struct
import subprocess
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
# ggml type id -> (name, block size, bytes per block)
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 30: ("BF16", 1, 2),
    39: ("MXFP4", 32, 17),
}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def unpack(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.unpack("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8", errors="replace")

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            return [self.value(etype) for _ in range(count)]
        return self.unpack(SCALARS[vtype])


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.unpack("<I") == 0x46554747, "magic"
    doc = {"version": r.unpack("<I")}
    n_tensors, n_kv = r.unpack("<Q"), r.unpack("<Q")
    metadata = {}
    for _ in range(n_kv):
        key = r.string()
        metadata[key] = r.value(r.unpack("<I"))
    alignment = metadata.get("general.alignment", 32)
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        shape = [r.unpack("<Q") for _ in range(r.unpack("<I"))]
        tname, block, size = TYPES[r.unpack("<I")]
        offset = r.unpack("<Q")
        n = math.prod(shape)
        tensors.append({"name": name, "type": tname, "shape": shape, "offset": offset,
                        "bytes": n // block * size})
    doc.update(alignment=alignment, data_offset=(r.pos + alignment - 1) // alignment * alignment,
               metadata=metadata, tensors=tensors)
    return doc


def same(a, b):
    """Equality where floats compare at f32/f64 precision and NaN is JSON null."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b and type(a) == type(b)


def main():
    inspect, testdata, *extra = sys.argv[1:]
    if not os.path.isdir(testdata):
        print(f"SKIP: test data folder {testdata} not found")
        return 77
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(testdata) for f in fs
                   if f.endswith(".gguf")) + extra
    failures = 0
    for path in files:
        out = subprocess.run([inspect, "--json", path], capture_output=True, check=False)
        if out.returncode != 0:
            print(f"FAIL {path}: exit {out.returncode}: {out.stderr.decode()}")
            failures += 1
            continue
        got, want = json.loads(out.stdout), read_gguf(path)
        if not same(got, want):
            diff = [k for k in want if not same(got.get(k), want[k])]
            print(f"FAIL {path}: differs in {diff}")
            failures += 1
    print(f"{len(files) - failures} of {len(files)} files agree")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main())
