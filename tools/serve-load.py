#!/usr/bin/env python3
"""Load generator for lamina-serve (or any OpenAI-compatible server).

Runs C concurrent streaming /v1/completions clients for each concurrency
level C, each client sending requests back to back for a fixed time, and
reports the aggregate generated tokens/s, time to first token and the
inter-token latency percentiles. Only the Python standard library is used.

  tools/serve-load.py --url http://127.0.0.1:8080 --concurrency 1,8,32,64 \
      --seconds 20 --max-tokens 64

With --mixed N it instead sends N requests of every route (streamed and not,
refused ones included) from --concurrency's last level of clients on
keep-alive connections, and with --rss-pid prints the server's resident
memory as they go (to see it flat after warm-up):

  tools/serve-load.py --mixed 100000 --concurrency 16 --rss-pid $(pidof lamina-serve)
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


def mixed_requests(args):
    """(method, path, body, streamed) of every kind, in the order they cycle."""
    completion = {"model": args.model, "prompt": args.prompt, "max_tokens": 8, "temperature": 0.7}
    chat = {"model": args.model, "messages": [{"role": "user", "content": args.prompt}], "max_tokens": 8}
    return [
        ("GET", "/health", None, False),
        ("GET", "/v1/models", None, False),
        ("POST", "/v1/completions", completion, False),
        ("POST", "/v1/chat/completions", {**chat, "stream": True}, True),
        ("POST", "/tokenize", {"content": args.prompt * 20, "with_pieces": True}, False),
        ("POST", "/detokenize", {"tokens": [1, 2, 3, 4, 5]}, False),
        ("POST", "/v1/chat/completions", chat, False),
        ("POST", "/v1/completions", '{"prompt": [}', False),  # 400
        ("GET", "/nope", None, False),  # 404
        ("GET", "/metrics", None, False),
        ("POST", "/v1/completions", {**completion, "stream": True, "logprobs": 2}, True),
    ]


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_mixed(args, host, port, clients):
    kinds = mixed_requests(args)
    lock = threading.Lock()
    state = {"next": 0, "errors": 0}
    samples = []
    step = max(1, args.mixed // 20)
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key

    def client():
        conn = http.client.HTTPConnection(host, port, timeout=args.timeout)
        while True:
            with lock:
                i = state["next"]
                if i >= args.mixed:
                    break
                state["next"] = i + 1
                if args.rss_pid and i % step == 0:
                    samples.append((i, rss_mb(args.rss_pid)))
            method, path, body, _ = kinds[i % len(kinds)]
            payload = None if body is None else (body if isinstance(body, str) else json.dumps(body))
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status >= 500:
                    raise RuntimeError(f"{path}: HTTP {response.status}")
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
            except Exception as exc:  # noqa: BLE001 - counted, and the connection is renewed
                with lock:
                    state["errors"] += 1
                print(f"{method} {path}: {exc}", file=sys.stderr)
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=args.timeout)
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if args.rss_pid:
        samples.append((args.mixed, rss_mb(args.rss_pid)))
    print(f"{args.mixed} mixed requests from {clients} clients in {elapsed:.1f} s "
          f"({args.mixed / elapsed:.0f}/s), {state['errors']} errors")
    if samples:
        print("| requests | RSS MB |")
        print("|---:|---:|")
        for n, rss in samples:
            print(f"| {n} | {rss:.1f} |")
    return 1 if state["errors"] else 0


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
    parser.add_argument("--mixed", type=int, default=0, help="send this many requests of every route instead")
    parser.add_argument("--rss-pid", type=int, default=0, help="the server's process id, to sample its memory")
    args = parser.parse_args()

    url = urllib.parse.urlparse(args.url)
    if not args.model:
        args.model = first_model(args, url.hostname, url.port or 80)
    levels = [int(c) for c in args.concurrency.split(",") if c]
    if args.mixed:
        return run_mixed(args, url.hostname, url.port or 80, levels[-1])
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
