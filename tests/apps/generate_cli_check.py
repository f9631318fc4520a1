#!/usr/bin/env python3
"""lamina-generate and lamina-bench as a user meets them.

Usage: generate_cli_check.py LAMINA_GENERATE LAMINA_BENCH TESTDATA_DIR BUNDLED_MODEL
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


FORCED = b" ha ha ha ha\n"


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, check=False)


def main():
    generate, bench, testdata, bundled = sys.argv[1:]
    models = os.path.join(testdata, "models")
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    # README's run command: the bundled model, no -m.
    r = run(generate, "-n", "200", "--temp", "0", "--no-display-prompt", "-t", "1")
    expect(r.returncode == 0, f"default model run exits 0 ({r.stderr!r})")
    expected_path = os.path.join(models, "stories260K.expected-greedy-200.txt")
    if os.path.exists(expected_path):
        with open(expected_path, "rb") as f:
            expected = f.read()
        expect(r.stdout == expected + b"\n", "greedy 200 tokens from BOS equal llama2.c's text")
    expect(b"tok/s" in r.stderr, "a timing line on stderr")

    r = run(generate, "--json", "-n", "8", "--temp", "0", "-p", "Once upon", "-t", "1")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(set(doc) >= {"prompt_ids", "generated_ids", "text", "timings"}, "--json document keys")
    expect(set(doc.get("timings", {})) >= {"load_ms", "prompt_tokens_per_s", "gen_tokens_per_s"}, "--json timings")
    expect(len(doc.get("generated_ids", [])) == 8 and doc.get("prompt_ids", [0])[0] == 1, "--json ids")

    with tempfile.TemporaryDirectory() as tmp:
        logits = os.path.join(tmp, "logits.f32")
        # The float64 reference keeps K and V exact, as an f32 cache does.
        r = run(generate, "--prompt-ids", "1,403,407", "-n", "1", "--temp", "0", "--logits-out", logits, "-t", "1",
                "--kv-type", "f32")
        expect(r.returncode == 0 and os.path.getsize(logits) == 3 * 512 * 4, "--logits-out writes [3 x 512] f32")
        ref_path = os.path.join(models, "stories260K.reference.derived.json")
        if r.returncode == 0 and os.path.exists(ref_path):
            with open(ref_path) as f:
                ref = json.load(f)
            with open(logits, "rb") as f:
                row0 = struct.unpack("<512f", f.read(512 * 4))
            want = ref["logits"][0]["logits"]
            expect(max(abs(a - b) for a, b in zip(row0, want)) < 2e-5, "--logits-out row 0 matches the reference")

        truncated = os.path.join(tmp, "truncated.gguf")
        with open(bundled, "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[: len(data) // 2])
        for args, what in [
            (["-m", truncated], "truncated model"),
            (["-m", os.path.join(tmp, "missing.gguf")], "missing model"),
            (["-c", "4", "-p", "Once upon a time there was"], "prompt longer than the context"),
            (["--prompt-ids", "1,99999"], "token id outside the vocabulary"),
            (["--chat", "--chat-template", "banana", "-p", "hi"], "unknown chat family"),
        ]:
            r = run(generate, *args, "-n", "4")
            lines = r.stderr.decode(errors="replace").strip().splitlines()
            expect(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("lamina-generate: "),
                   f"{what}: exit 1 with one error line (got {r.returncode}: {r.stderr!r})")
    # The library's option names come back as the flags that set them.
    r = run(generate, "-c", "4", "-p", "Once upon a time there was", "-n", "4")
    expect(b"--ctx-size" in r.stderr and b"ForwardOptions" not in r.stderr, f"context error names the flag ({r.stderr!r})")
    r = run(generate, "--chat", "--chat-template", "banana", "-p", "hi", "-n", "4")
    expect(b"--chat-template" in r.stderr and b"banana" in r.stderr, f"chat family error names the flag ({r.stderr!r})")
    # One chat policy with lamina-serve: a model without a template gets ChatML, said on stderr.
    r = run(generate, "--chat", "-p", "hi", "-n", "4", "--temp", "0", "-t", "1")
    expect(r.returncode == 0 and b"chatml (the model has no chat template)" in r.stderr,
           f"--chat without a template falls back to ChatML ({r.returncode}: {r.stderr!r})")
    r = run(generate, "--temp", "banana")
    expect(r.returncode != 0 and r.stderr, "bad flag value is an error")
    r = run(generate, "--help")
    expect(r.returncode == 0 and b"--n-predict" in r.stdout, "--help")

    r = run(generate, "-n", "200", "--temp", "0", "--stop", "Lily", "--no-display-prompt", "-t", "1")
    expect(r.stdout == b"Once upon a time, there was a little girl named \n", f"--stop cuts the text ({r.stdout!r})")
    a = run(generate, "-n", "30", "--temp", "1", "-s", "5", "--no-display-prompt", "-t", "1").stdout
    b = run(generate, "-n", "30", "--temp", "1", "-s", "5", "--no-display-prompt", "-t", "1").stdout
    expect(a == b and a, "the same seed gives the same text")
    # --logit-bias: +100 forces token 300 (" ha") at any temperature; bad values are errors.
    for temp in ("0", "1"):
        r = run(generate, "-p", "Once upon a time", "-n", "4", "--temp", temp, "--logit-bias", "300+100",
                "--no-display-prompt", "-t", "1")
        expect(r.returncode == 0 and r.stdout == FORCED, f"--logit-bias 300+100 at temp {temp} ({r.stdout!r})")
    for bad in ("5x", "5+101", "99999+1"):
        r = run(generate, "-n", "2", "--logit-bias", bad, "-t", "1")
        expect(r.returncode != 0 and b"logit" in r.stderr.lower(), f"--logit-bias {bad} is an error ({r.stderr!r})")

    # --device cuda: the GPU's text, or (no GPU / no CUDA build) one error line.
    cpu = run(generate, "-n", "24", "--temp", "0", "--no-display-prompt", "-t", "1")
    r = run(generate, "-n", "24", "--temp", "0", "--no-display-prompt", "--device", "cuda")
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    expect((r.returncode == 0 and r.stdout == cpu.stdout) or
           (r.returncode == 1 and len(lines) == 1 and (b"GPU" in r.stderr or b"CUDA" in r.stderr)),
           f"--device cuda runs or says why not ({r.returncode}: {r.stderr!r})")
    # --device auto always runs (on the CPU when the GPU cannot be used).
    r = run(generate, "-n", "24", "--temp", "0", "--no-display-prompt", "-t", "1", "--device", "auto")
    expect(r.returncode == 0 and r.stdout == cpu.stdout, f"--device auto gives the same text ({r.stderr!r})")
    # --backend-dir without the CUDA module: auto says so on the CPU, cuda fails, both naming the file.
    with tempfile.TemporaryDirectory() as empty:
        module = os.path.join(empty, "lamina-model-cuda.so").encode()
        r = run(generate, "-n", "24", "--temp", "0", "--no-display-prompt", "-t", "1", "--device", "auto",
                "--backend-dir", empty)
        expect(r.returncode == 0 and r.stdout == cpu.stdout and
               b"GPU not used: the backend module " + module + b" is not installed" in r.stderr,
               f"--device auto without the module runs on the CPU and says why ({r.stderr!r})")
        r = run(generate, "-n", "24", "--device", "cuda", "--backend-dir", empty)
        expect(r.returncode == 1 and module + b" is not installed" in r.stderr,
               f"--device cuda without the module fails naming it ({r.stderr!r})")

    # A quantized model when the reference data is there, else the bundled
    # one: the bench's own behaviour does not depend on the model.
    tiny = os.path.join(models, "TinyStories-656K-Q8_0.gguf")
    if not os.path.exists(tiny):
        tiny = bundled
    r = run(bench, "-m", tiny, "-p", "16", "-n", "4", "-r", "2", "-t", "1", "-o", "json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    tests = [x["test"] for x in doc.get("results", [])]
    expect(tests == ["pp16", "tg4"], f"lamina-bench runs pp16 and tg4 ({r.stderr!r})")
    expect(all(x["tokens_per_s_mean"] > 0 for x in doc.get("results", [])), "bench speeds are positive")
    expect(doc.get("peak_rss_bytes", 0) > 0 and doc.get("build", {}).get("simd_target"), "bench reports memory and target")
    expect(doc.get("load_cpu_ms", 0) > 0 and doc.get("first_token_cpu_ms", 0) > 0,
           "bench reports the CPU time of the load and of the first token")
    r = run(bench, "-m", tiny, "-p", "16", "-n", "4", "-r", "1", "-t", "1")
    expect(r.returncode == 0 and b"| pp16 |" in r.stdout, "markdown table")
    r = run(bench, "-m", os.path.join(models, "nope.gguf"))
    expect(r.returncode == 1, "bench: missing model is an error")

    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
