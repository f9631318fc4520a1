#!/usr/bin/env python3
"""Load generator for lamina-serve (or any OpenAI-compatible server).

Runs C concurrent streaming /v1/completions clients for each concurrency
level C, each client sending requests back to back for a fixed time, and
reports the aggregate generated tokens/s, time to first token and the
inter-token latency percentiles. Only the Python standard library is used.

  tools/serve-load.py --url http://127.0.0.1:8080 --concurrency 1,8,32,64 \
      --seconds 20 --max-tokens 64
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1)))))
    return ordered[k]


class Totals:
    def __init__(self):
        self.lock = threading.Lock()
        self.tokens = 0
        self.requests = 0
        self.errors = 0
        self.ttft = []
        self.itl = []

    def add(self, tokens, ttft, gaps):
        with self.lock:
            self.tokens += tokens
            self.requests += 1
            if ttft is not None:
                self.ttft.append(ttft)
            self.itl.extend(gaps)

    def error(self):
        with self.lock:
            self.errors += 1


def one_request(host, port, body, headers, timeout):
    """Streams one completion; returns (tokens, ttft, inter-token gaps)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body=body, headers=headers)
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    chunks, usage_tokens, ttft, last, gaps = 0, None, None, None, []
    for raw in response:
        line = raw.strip()
        if not line.startswith(b"data: "):
            continue
        payload = line[6:]
        if payload == b"[DONE]":
            break
        chunk = json.loads(payload)
        if chunk.get("usage"):
            usage_tokens = chunk["usage"]["completion_tokens"]
        if not chunk.get("choices"):
            continue
        now = time.perf_counter()
        chunks += 1
        if ttft is None:
            ttft = now - start
        else:
            gaps.append(now - last)
        last = now
    conn.close()
    # The usage chunk counts tokens exactly; chunk arrivals time them (a
    # server may hold a token back while a stop string could still match).
    return (usage_tokens if usage_tokens is not None else chunks), ttft, gaps


def run_level(args, host, port, concurrency):
    totals = Totals()
    deadline = time.perf_counter() + args.seconds
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key

    def client(index):
        n = 0
        while time.perf_counter() < deadline:
            body = json.dumps({
                "model": args.model,
                "prompt": f"{args.prompt} ({index}-{n})",
                "max_tokens": args.max_tokens,
                "temperature": args.temperature,
                "seed": index * 1000 + n,
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            })
            n += 1
            try:
                totals.add(*one_request(host, port, body, headers, args.timeout))
            except Exception as exc:  # noqa: BLE001 - every failure counts
                totals.error()
                print(f"client {index}: {exc}", file=sys.stderr)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {
        "concurrency": concurrency,
        "requests": totals.requests,
        "errors": totals.errors,
        "tokens": totals.tokens,
        "seconds": elapsed,
        "tokens_per_s": totals.tokens / elapsed,
        "ttft_p50_ms": 1e3 * percentile(totals.ttft, 50),
        "ttft_p99_ms": 1e3 * percentile(totals.ttft, 99),
        "itl_p50_ms": 1e3 * percentile(totals.itl, 50),
        "itl_p99_ms": 1e3 * percentile(totals.itl, 99),
        "itl_mean_ms": 1e3 * statistics.fmean(totals.itl) if totals.itl else float("nan"),
    }


def first_model(args, host, port):
    conn = http.client.HTTPConnection(host, port, timeout=args.timeout)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    conn.request("GET", "/v1/models", headers=headers)
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"GET /v1/models: HTTP {response.status}: {body[:200]!r}")
    return json.loads(body)["data"][0]["id"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--model", default="", help="model id (default: the first one GET /v1/models lists)")
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--prompt", default="Once upon a time")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()

    url = urllib.parse.urlparse(args.url)
    if not args.model:
        args.model = first_model(args, url.hostname, url.port or 80)
    levels = [int(c) for c in args.concurrency.split(",") if c]
    results = [run_level(args, url.hostname, url.port or 80, c) for c in levels]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    base = results[0]
    print("| streams | requests | errors | tokens/s | x single | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | ITL p99 / single |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['concurrency']} | {r['requests']} | {r['errors']} | {r['tokens_per_s']:.1f} | "
              f"{r['tokens_per_s'] / base['tokens_per_s']:.2f} | {r['ttft_p50_ms']:.1f} | {r['ttft_p99_ms']:.1f} | "
              f"{r['itl_p50_ms']:.1f} | {r['itl_p99_ms']:.1f} | {r['itl_p99_ms'] / base['itl_p99_ms']:.2f} |")
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
