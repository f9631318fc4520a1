#!/usr/bin/env python3
"""Greedy completions through lamina-serve are the same alone and under load.

  serve-determinism.py --url http://127.0.0.1:8093 [--streams 64] [--max-tokens 48]

Sends each of a few probe prompts alone, then again while `streams` other
requests (other prompts, other lengths, streamed and not) run beside them,
and compares the texts byte for byte. Exits 1 on any difference.
"""
import argparse, json, sys, threading, urllib.request


MODEL = ""


def complete(url, prompt, max_tokens, stream=False):
    body = json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": stream}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        data = r.read().decode()
    if not stream:
        return json.loads(data)["choices"][0]["text"]
    text = ""
    for line in data.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            text += json.loads(line[6:])["choices"][0].get("text", "")
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=48)
    a = ap.parse_args()
    global MODEL
    with urllib.request.urlopen(a.url + "/v1/models", timeout=30) as r:
        MODEL = json.loads(r.read())["data"][0]["id"]
    probes = ["Once upon a time", "The capital of France is", "def fibonacci(n):", "1, 2, 3, 5, 8,"]
    alone = [complete(a.url, p, a.max_tokens) for p in probes]
    under = [None] * len(probes)
    errors = []

    def neighbour(i):
        try:
            complete(a.url, f"Story number {i}: " + "word " * (i * 7 % 90), 16 + i % 50, stream=i % 2 == 0)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(str(e))

    def probe(k):
        under[k] = complete(a.url, probes[k], a.max_tokens, stream=k % 2 == 1)

    threads = [threading.Thread(target=neighbour, args=(i,)) for i in range(a.streams)]
    threads += [threading.Thread(target=probe, args=(k,)) for k in range(len(probes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    same = sum(1 for x, y in zip(alone, under) if x == y)
    print(f"{same}/{len(probes)} probes identical alone and beside {a.streams} streams; {len(errors)} neighbour errors")
    for x, y in zip(alone, under):
        if x != y:
            print(f"  alone: {x!r}\n  under: {y!r}")
    return 0 if same == len(probes) and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
