#!/usr/bin/env python3
"""lamina-serve's agent features end to end, for a device the npm suite cannot reach.

  serve-features.py --serve EXE --model DIR [--device cuda] [--extra "--split-mode layer"]

Starts lamina-serve (twice: the prefix-cache check compares with a cold server) and checks:
JSON-schema outputs at temperature 1 parse and validate; tool_choice required and a named
function give calls of the allowed function with valid arguments; n > 1 is reproducible;
logit_bias +100 forces a token; a request sharing a long prefix with an earlier one reuses it and
gets the cold server's log-probabilities bit for bit; embeddings alone equal embeddings in a batch.
The model folder needs a chat template that teaches a tool-call format (e.g. Qwen 3's).
Exits 1 on any failure.
"""
import argparse, json, socket, subprocess, sys, time, urllib.request

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def post(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return {"http_error": e.code, "body": e.read().decode()}


class Server:
    def __init__(self, a):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        cmd = [a.serve, "-m", a.model, "--device", a.device, "--port", str(self.port), "--parallel", "8",
               "-c", "2048"] + a.extra.split()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(self.url + "/health", timeout=2)
                return
            except Exception:
                time.sleep(0.5)
        raise RuntimeError("lamina-serve did not start: " + self.proc.stdout.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


SCHEMA = {
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                        "required": ["x", "y"], "additionalProperties": False}},
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "kind": {"enum": ["circle", "line"]},
        "points": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1, "maxItems": 3},
        "note": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
    },
    "required": ["name", "kind", "points", "note"],
    "additionalProperties": False,
}


def valid(doc):
    if not isinstance(doc, dict) or set(doc) != {"name", "kind", "points", "note"}:
        return False
    if not isinstance(doc["name"], str) or len(doc["name"]) > 12 or doc["kind"] not in ("circle", "line"):
        return False
    pts = doc["points"]
    if not isinstance(pts, list) or not 1 <= len(pts) <= 3:
        return False
    for p in pts:
        if not isinstance(p, dict) or set(p) != {"x", "y"} or not all(type(p[k]) is int for k in p):
            return False
    return doc["note"] is None or isinstance(doc["note"], bool)


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                    "unit": {"enum": ["c", "f"]}},
                   "required": ["city"], "additionalProperties": False}}},
         {"type": "function", "function": {
             "name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}},
                                                "required": ["zone"]}}}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    srv = Server(a)
    url = srv.url
    user = [{"role": "user", "content": "Describe a shape."}]

    ok = 0
    for seed in range(8):
        r = post(url, "/v1/chat/completions", {"messages": user, "temperature": 1, "seed": seed, "max_tokens": 160,
                                               "response_format": {"type": "json_schema", "json_schema": {
                                                   "name": "shape", "strict": True, "schema": SCHEMA}}})
        c = r["choices"][0]
        if c["finish_reason"] != "stop":
            continue
        ok += valid(json.loads(c["message"]["content"]))
        check(valid(json.loads(c["message"]["content"])), f"json_schema seed {seed}: {c['message']['content'][:60]}")
    check(ok > 0, f"json_schema: {ok} finished outputs validated")

    for choice in ("required", {"type": "function", "function": {"name": "get_time"}}):
        for seed in range(4):
            r = post(url, "/v1/chat/completions", {"messages": [{"role": "user", "content": "Weather in Oslo?"}],
                                                   "tools": TOOLS, "tool_choice": choice, "temperature": 1,
                                                   "seed": seed, "max_tokens": 120, "parallel_tool_calls": False})
            c = r["choices"][0]
            calls = c["message"].get("tool_calls") or []
            good = c["finish_reason"] == "tool_calls" and len(calls) == 1
            if good:
                f = calls[0]["function"]
                args = json.loads(f["arguments"])
                want = "get_time" if isinstance(choice, dict) else None
                good = (f["name"] == want if want else f["name"] in ("get_weather", "get_time"))
                good = good and (isinstance(args.get("zone"), str) if f["name"] == "get_time"
                                 else isinstance(args.get("city"), str) and len(args["city"]) <= 10)
            check(good, f"tool_choice {choice if isinstance(choice, str) else 'named'} seed {seed}: {calls}")

    body = {"prompt": "Once upon a time", "max_tokens": 16, "n": 4, "temperature": 1, "seed": 11}
    first, again = post(url, "/v1/completions", body), post(url, "/v1/completions", body)
    texts = [c["text"] for c in first["choices"]]
    check(len(texts) == 4 and texts == [c["text"] for c in again["choices"]], f"n = 4 reproducible: {texts}")

    tok = post(url, "/tokenize", {"content": " sunny"})["tokens"][0]
    piece = post(url, "/detokenize", {"tokens": [tok]})["content"]
    r = post(url, "/v1/completions", {"prompt": "The sky is", "max_tokens": 4, "temperature": 1, "seed": 3,
                                      "logit_bias": {str(tok): 100}})
    check(r["choices"][0]["text"] == piece * 4, f"logit_bias +100 forces token {tok} ({piece!r}): {r['choices'][0]['text']!r}")

    shared = " ".join(f"step {i} of the long shared instructions;" for i in range(60))
    ask = {"max_tokens": 6, "temperature": 0, "logprobs": 5}
    post(url, "/v1/completions", dict(ask, prompt=shared + " first question"))
    warm = post(url, "/v1/completions", dict(ask, prompt=shared + " second question"))
    cached = (warm.get("usage", {}).get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    check(cached >= 256, f"prefix reused: {cached} of {warm['usage']['prompt_tokens']} prompt tokens cached")

    inputs = ["a red ball", "a blue kite"]
    both = post(url, "/v1/embeddings", {"input": inputs})["data"]
    alone = post(url, "/v1/embeddings", {"input": inputs[1]})["data"][0]["embedding"]
    check(both[1]["embedding"] == alone, "embedding alone == in a batch")
    metrics = urllib.request.urlopen(url + "/metrics").read().decode()
    print("\n".join(l for l in metrics.splitlines() if l.startswith(("lamina_kv_blocks", "lamina_prefix"))))
    srv.stop()

    cold = Server(a)
    fresh = post(cold.url, "/v1/completions", dict(ask, prompt=shared + " second question"))
    cold.stop()
    check(fresh["choices"][0]["logprobs"] == warm["choices"][0]["logprobs"],
          "log-probabilities after a cached prefix == a cold server's")
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
