#!/usr/bin/env python3
"""lamina-serve against hostile clients, on 127.0.0.1 only (TAP output).

Each case attacks a running server the way a hostile client would, asserts
a clean answer within a deadline, then that the server's resident memory is
still within a stated bound of what it was after warm-up and that a normal
request is served. Python's standard library only.

  hostile_clients.py LAMINA_SERVE [--sanitized] [--only SUBSTRING]
  hostile_clients.py LAMINA_SERVE --report --scale issue --fresh --legacy

--report prints what each attack measured without stopping at a failed
expectation (for the note's before/after table), --scale issue uses the
issue's attack sizes, --fresh starts a new server for each case, --legacy
leaves out the flags an older lamina-serve does not know.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import sys
import time
import traceback

from hostile_http import (AUTH, KEY, Server, first_status, flood, gzip_bomb, metrics, post, raw_exchange, raw_post,
                          request, slowloris, statuses, timed_request, trickle)

HEALTHY_WITHIN_S = 2.0
SMALL_COMPLETION = {'prompt': 'Once upon a time', 'max_tokens': 4, 'temperature': 0}


class Failure(AssertionError):
    pass


class Skip(Exception):
    """A case this machine cannot run (reported as TAP SKIP, with why)."""


def expect(cond, what):
    if not cond:
        raise Failure(what)


class Suite:
    def __init__(self, opts):
        self.opts = opts
        self.issue = opts.scale == 'issue'
        # Deadlines are for a release build; sanitizers slow the server down.
        self.slow = 4.0 if opts.sanitized else 1.0
        self.main = None
        self.baseline = 0.0
        self.notes = []

    # --- servers ---
    def server_args(self, args):
        if not self.opts.legacy:
            return args
        new_flags = {'--header-timeout', '--keep-alive-timeout', '--max-connections', '--http-workers',
                     '--cors-origin'}
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in new_flags:
                skip = True
                continue
            out.append(a)
        return out

    def env(self):
        env = dict(os.environ)
        if self.opts.sanitized:
            # A small quarantine keeps RSS meaningful; detection is unchanged.
            env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':quarantine_size_mb=16'
        return env

    def start(self, args, preexec_fn=None, must_listen=True):
        s = Server(self.opts.exe, self.server_args(args), env=self.env(), preexec_fn=preexec_fn)
        ok = s.wait_listening()
        if must_listen and not ok:
            raise Failure(f'lamina-serve did not start:\n{s.log()}')
        return s

    SLOWLORIS = 1000
    # The slowloris case needs its connections twice over (ours and the
    # server's, both in this process's limit when the server inherits it).
    NEEDED_FILES = 2 * SLOWLORIS + 400

    def start_main(self):
        # The server inherits the raised limit and asks for --max-connections + 64.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < self.NEEDED_FILES and hard > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, self.NEEDED_FILES), hard))
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        connections = max(64, min(2 * self.SLOWLORIS, files - 100))
        self.main = self.start(['--api-key', KEY, '--parallel', '2', '--max-queue', '8', '--header-timeout', '10',
                                '--max-connections', str(connections), '--timeout', '10'])
        for _ in range(20):
            self.assert_serving(record=False)
        self.baseline = self.main.rss_mb()

    def stop_main(self):
        if self.main:
            code = self.main.stop()
            log = self.main.log()
            self.main = None
            return code, log
        return 0, ''

    # --- checks after every case ---
    def rss_bound_mb(self):
        return 96.0 if self.opts.sanitized else 64.0

    def assert_serving(self, record=True):
        port = self.main.port
        status, _, body, took = request(port, 'GET', '/health', timeout=10)
        expect(status == 200, f'/health answered {status}')
        status, _, body, took2 = post(port, '/v1/completions', SMALL_COMPLETION, timeout=10)
        expect(status == 200, f'a normal completion answered {status}: {body[:200]!r}')
        expect(took + took2 < HEALTHY_WITHIN_S * self.slow, f'normal requests took {took + took2:.2f} s')
        if record:
            rss = self.main.rss_mb()
            self.note(f'RSS after: {rss:.0f} MB, peak so far {self.main.peak_rss_mb():.0f} MB '
                      f'(warm: {self.baseline:.0f} MB)')
            expect(rss <= self.baseline + self.rss_bound_mb(),
                   f'RSS {rss:.0f} MB is more than {self.rss_bound_mb():.0f} MB above the warm {self.baseline:.0f} MB')

    def note(self, text):
        self.notes.append(text)

    # With --report a missed status or deadline is noted and the case goes on.
    def within(self, seconds, took, what):
        ok = took <= seconds * self.slow
        self.note(f'{what}: {took:.2f} s' + ('' if ok else f' (limit {seconds * self.slow:.1f} s)'))
        expect(ok or self.opts.report, f'{what} took {took:.2f} s (limit {seconds * self.slow:.1f} s)')

    def status_is(self, status, wanted, what):
        self.note(f'{what}: status {status}' + ('' if status == wanted else f' (expected {wanted})'))
        expect(status == wanted or self.opts.report, f'{what}: status {status}, expected {wanted}')

    def answered(self, path, body, wanted, what, seconds, code=None, headers=None, timeout=120):
        """POSTs `body` to the main server: `wanted` within `seconds`, with
        the error code `code` when given."""
        status, _, reply, took = post(self.main.port, path, body, headers, timeout=timeout)
        self.status_is(status, wanted, what)
        if code and status == wanted:
            expect(code.encode() in reply, reply[:200])
        self.within(seconds, took, 'answered in')


CASES = []


def case(row, title, own_server=False):
    def register(fn):
        CASES.append((row, title, fn, own_server))
        return fn
    return register


# Row 1 -------------------------------------------------------------------
@case(1, 'JSON: 400,000 empty objects in an unknown field, 2.7M in messages, 1M-deep nesting')
def json_shapes(t):
    body = '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"junk":[{}' + ',{}' * 400_000 + ']}'
    t.answered('/v1/chat/completions', body, 400, f'{len(body) / 1e6:.1f} MB of empty objects in an unknown field',
               1.0, timeout=300)
    body = '{"messages":[{}' + ',{}' * 2_700_000 + ']}'
    t.answered('/v1/chat/completions', body, 400, f'{len(body) / 1e6:.1f} MB of empty objects in messages', 1.0,
               timeout=30)
    body = '{"a":' + '[' * 1_000_000 + ']' * 1_000_000 + '}'
    t.answered('/v1/completions', body, 400, '1,000,000-deep nesting', 1.0)
    ids = list(range(1, 300)) * 1000
    t.answered('/v1/completions', {'prompt': ids, 'max_tokens': 1}, 400, f'a prompt of {len(ids)} token ids', 1.0,
               code='context_length_exceeded')


# Row 2 -------------------------------------------------------------------
@case(2, 'Content-Encoding: gzip and br bodies are refused, never inflated')
def compressed_bodies(t):
    port = t.main.port
    bomb = gzip_bomb(200 << 20)
    t.answered('/v1/completions', bomb, 415, f'{len(bomb) / 1e3:.0f} KB gzip that inflates to 200 MB', 1.0,
               headers={'Content-Encoding': 'gzip'})
    status, _, _, took = post(port, '/v1/completions', b'\x1b\x00garbage', {'Content-Encoding': 'br'}, timeout=30)
    t.status_is(status, 415, 'Content-Encoding: br')
    ok = json.dumps(SMALL_COMPLETION)
    status, _, _, _ = post(port, '/v1/completions', ok, {'Content-Encoding': 'identity'})
    t.status_is(status, 200, 'Content-Encoding: identity')


# Row 3 -------------------------------------------------------------------
@case(3, 'a chunked body past --max-body-size gets 413 once the limit is reached')
def chunked_oversize(t):
    total = (512 if t.issue else 64) << 20
    head = (b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + KEY.encode() +
            b'\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')
    payload = b'a' * 65536
    chunk = b'%x\r\n' % len(payload) + payload + b'\r\n'
    status, sent, took = flood(t.main.port, head, chunk, total, timeout=120)
    t.status_is(status, 413, f'chunks offered: {total >> 20} MB, sent before the answer: {sent / 1e6:.1f} MB')
    t.within(2.0, took, 'answered in')


# Row 4 -------------------------------------------------------------------
@case(4, 'a huge header line and a million header fields, without the API key: 431')
def huge_headers(t):
    total = (256 if t.issue else 64) << 20
    head = b'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Long: '
    status, sent, took = flood(t.main.port, head, b'a' * 65536, total, timeout=120)
    t.status_is(status, 431, f'a header line of up to {total >> 20} MB (sent {sent / 1e6:.1f} MB)')
    t.within(1.0, took, 'answered in')
    n = 1_000_000
    status, sent, took = flood(t.main.port, b'GET /v1/models HTTP/1.1\r\nHost: x\r\n', b'X-A: b\r\n' * 1000,
                               n * 8, timeout=120)
    t.status_is(status, 431, f'{n} header fields offered (sent {sent / 1e6:.1f} MB)')
    t.within(1.0, took, 'answered in')
    head = b'GET /v1/models HTTP/1.1\r\nHost: x\r\n' + b'X-A: b\r\n' * 150 + b'\r\n'
    reply, _ = raw_exchange(t.main.port, head)
    t.status_is(first_status(reply), 431, '150 small header fields')


# Row 5 -------------------------------------------------------------------
@case(5, 'abandoned non-streamed requests are cancelled: their slots and queue places free at once')
def abandoned_requests(t):
    port = t.main.port
    before = metrics(port)
    cancelled_key = 'lamina_completion_requests_total{endpoint="chat_completions",finish_reason="cancelled"}'
    body = json.dumps({'messages': [{'role': 'user', 'content': 'Tell me a long story.'}], 'ignore_eos': True})
    req = (f'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n'
           f'Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}').encode()
    socks = []
    for _ in range(10):
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(req)
        socks.append(s)
    time.sleep(0.5)
    for s in socks:
        s.close()
    left = time.monotonic()
    freed = None
    while time.monotonic() - left < 60:
        m = metrics(port)
        if m.get('lamina_active_sequences') == 0 and m.get('lamina_queue_depth') == 0:
            freed = time.monotonic() - left
            break
        time.sleep(0.02)
    expect(freed is not None, 'slots still busy 60 s after the clients left')
    t.within(1.0, freed, '10 abandoned requests: slots and queue free after')
    status, _, _, _ = post(port, '/v1/completions', SMALL_COMPLETION)
    t.status_is(status, 200, 'a request right after')
    cancelled = metrics(port).get(cancelled_key, 0) - before.get(cancelled_key, 0)
    t.note(f'cancelled: {cancelled:.0f}')
    expect(cancelled == 10, f'{cancelled:.0f} requests were cancelled, expected 10')


# Row 6 -------------------------------------------------------------------
@case(6, 'slowloris: 1,000 connections trickle header lines; /health and completions stay within 1 s')
def slowloris_case(t):
    port = t.main.port
    n = t.SLOWLORIS
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if files < n + 200:
        raise Skip(f'{n} connections need more open files than the limit of {files} (ulimit -Hn)')
    body = json.dumps(SMALL_COMPLETION)
    health = b'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    completion = (f'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n'
                  f'Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}').encode()

    async def probe(window):
        results = []
        end = time.monotonic() + window
        while time.monotonic() < end:
            for raw in (health, completion):
                results.append(await timed_request(port, raw, 5.0))
            await asyncio.sleep(0.05)
        return results

    interval = 5.0 if t.issue else 0.5
    opened, results = asyncio.run(slowloris(port, n, interval, 3.0, probe))
    worst = max(s for _, s in results)
    answered = [st for st, _ in results]
    t.note(f'{opened} trickling connections, {len(results)} probe requests, statuses {sorted(set(answered))}, '
           f'slowest {worst:.3f} s')
    expect(opened == n, f'only {opened} of {n} connections opened')
    expect(all(st == 200 for st in answered), f'probe statuses {answered}')
    expect(worst < 1.0, f'a probe request took {worst:.2f} s')


@case(6, 'header and body deadlines: a trickled header or body gets 408', own_server=True)
def deadlines(t):
    s = t.start(['--header-timeout', '1', '--timeout', '1'])
    try:
        got, took = trickle(s.port, b'GET /health HTTP/1.1\r\n', b'X-A: v\r\n')
        t.status_is(first_status(got), 408, 'a header trickled a line every 0.1 s')
        t.within(2.5, took, 'answered in')
        got, took = trickle(s.port, b'POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{', b' ')
        t.status_is(first_status(got), 408, 'a body trickled a byte every 0.1 s')
        t.within(2.5, took, 'answered in')
    finally:
        expect(s.stop() == 0, f'exit code after SIGTERM:\n{s.log()}')


# Row 7 -------------------------------------------------------------------
@case(7, 'start-up: fails before "listening" with a clear message; --max-queue 1000 under ulimit -v', own_server=True)
def startup(t):
    taken = socket.socket()
    taken.bind(('127.0.0.1', 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    s = Server(t.opts.exe, [], env=t.env(), port=port)
    code = s.proc.wait(60)
    taken.close()
    s.wait_listening(1)
    text = s.log()
    t.note(f'port in use: exit {code}')
    expect(code == 1 and 'cannot listen' in text and 'listening on' not in text, text)

    if not t.opts.legacy:
        def few_files():
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        s = Server(t.opts.exe, ['--max-connections', '1000'], env=t.env(), preexec_fn=few_files)
        code = s.proc.wait(60)
        s.wait_listening(1)
        text = s.log()
        t.note(f'--max-connections 1000 with 256 open files: exit {code}')
        expect(code == 1 and 'open files' in text and 'listening on' not in text, text)

    if t.opts.sanitized:
        t.note('ulimit -v: skipped (sanitizers reserve terabytes of address space)')
        return

    def small_address_space():
        limit = 4 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    s = Server(t.opts.exe, ['--max-queue', '1000'], env=t.env(), preexec_fn=small_address_space)
    listening = s.wait_listening(60)
    try:
        if listening:
            status, _, _, _ = request(s.port, 'POST', '/v1/completions', json.dumps(SMALL_COMPLETION))
            t.note(f'--max-queue 1000 under ulimit -v 4 GiB: serves, status {status}')
            expect(status == 200, f'status {status}')
        else:
            code = s.proc.wait(10)
            t.note(f'--max-queue 1000 under ulimit -v 4 GiB: exit {code}')
            expect(False, f'did not start (exit {code}):\n{s.log()}')
    finally:
        s.stop()


# Row 8 -------------------------------------------------------------------
@case(8, '/tokenize with_pieces: oversized content refused at once; pieces do not multiply memory')
def tokenize_pieces(t):
    port = t.main.port
    words = ('Once upon a time there was a little dog named Max. ' * 160_000)[:7_800_000]
    body = json.dumps({'content': words, 'with_pieces': True})

    async def three():
        loop = asyncio.get_running_loop()
        return await asyncio.gather(*[loop.run_in_executor(None, lambda: post(port, '/tokenize', body, timeout=120))
                                      for _ in range(3)])

    started = time.monotonic()
    results = asyncio.run(three())
    took = time.monotonic() - started
    for status, _, _, _ in results:
        t.status_is(status, 400, '3 concurrent 7.8 MB /tokenize with_pieces')
    t.within(1.5, took, 'all answered in')
    text = 'Once upon a time there was a little dog named Max. ' * 100
    status, _, reply, _ = post(port, '/tokenize', {'content': text, 'with_pieces': True})
    t.status_is(status, 200, f'{len(text)} bytes with pieces')
    pieces = json.loads(reply)['tokens']
    expect(''.join(p['piece'] for p in pieces).strip() == text.strip(), 'the pieces do not spell the text')


# Row 9 -------------------------------------------------------------------
@case(9, 'an 8 MB prompt gets its 400 without being tokenized')
def huge_prompt(t):
    text = 'Once upon a time there was a little dog. ' * 200_000
    t.answered('/v1/completions', {'prompt': text, 'max_tokens': 1}, 400, f'a {len(text) / 1e6:.1f} MB prompt', 0.5,
               code='context_length_exceeded')
    t.answered('/v1/chat/completions', {'messages': [{'role': 'user', 'content': text}], 'max_tokens': 1}, 400,
               f'a {len(text) / 1e6:.1f} MB chat message', 0.5, code='context_length_exceeded')


# Row 10 ------------------------------------------------------------------
@case(10, 'framing: pipelining, early 413, CL+CL, CL+TE, bad chunks, NUL, HTTP/1.0, Expect')
def framing(t):
    port = t.main.port
    tok = json.dumps({'content': 'Hi there'}).encode()
    pipelined = (b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' + raw_post(b'/tokenize', tok, close=False) +
                 b'GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + KEY.encode() +
                 b'\r\nConnection: close\r\n\r\n')
    reply, _ = raw_exchange(port, pipelined)
    t.note(f'3 pipelined requests: statuses {statuses(reply)}')
    expect(statuses(reply) == [200, 200, 200], reply[:300])
    expect(reply.index(b'"status"') < reply.index(b'"tokens"') < reply.index(b'"object"'), 'answers out of order')

    head = (b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + KEY.encode() +
            b'\r\nContent-Length: 1000000000\r\n\r\n')
    reply, took = raw_exchange(port, head, timeout=10)
    t.status_is(first_status(reply), 413, 'Content-Length: 1000000000, no body sent')
    t.within(0.5, took, 'answered and closed in')

    body = json.dumps(SMALL_COMPLETION).encode()
    reply, _ = raw_exchange(port, raw_post(b'/v1/completions', body, b'Content-Length: %d\r\n' % len(body)))
    t.status_is(first_status(reply), 400, 'two equal Content-Length headers')
    reply, _ = raw_exchange(port, raw_post(b'/v1/completions', body, b'Transfer-Encoding: chunked\r\n'))
    t.status_is(first_status(reply), 400, 'Content-Length and Transfer-Encoding: chunked')
    reply, _ = raw_exchange(port, b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nxx')
    t.status_is(first_status(reply), 501, 'Transfer-Encoding: gzip')
    reply, took = raw_exchange(port, b'POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + KEY.encode() +
                               b'\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n', timeout=10)
    t.status_is(first_status(reply), 400, 'chunk size -2')
    t.within(0.5, took, 'answered in')
    reply, _ = raw_exchange(port, raw_post(b'/v1/completions', body + b'\x00garbage'))
    t.status_is(first_status(reply), 400, 'a JSON body followed by NUL and garbage')
    reply, _ = raw_exchange(port, raw_post(b'/v1/completions', body, version=b'1.0'))
    status_line = reply.split(b'\r\n', 1)[0].decode()
    t.note(f'HTTP/1.0 request: {status_line}')
    expect(reply.startswith(b'HTTP/1.0 200'), reply[:100])
    stream = json.dumps({**SMALL_COMPLETION, 'stream': True}).encode()
    reply, took = raw_exchange(port, raw_post(b'/v1/completions', stream, version=b'1.0'))
    expect(reply.startswith(b'HTTP/1.0 200') and b'transfer-encoding' not in reply.lower() and
           reply.rstrip().endswith(b'data: [DONE]'), reply[:300])
    t.note('HTTP/1.0 stream: no chunks, ends with the connection')
    reply, _ = raw_exchange(port, raw_post(b'/v1/completions', body, b'Expect: 100-continue\r\n'))
    t.note(f'Expect: 100-continue: statuses {statuses(reply)}')
    expect(statuses(reply) == [100, 200], reply[:200])


# Row 11 ------------------------------------------------------------------
@case(11, 'a JSON body sent as a form (curl -d) is read as JSON, whatever its size')
def form_content_type(t):
    body = json.dumps({**SMALL_COMPLETION, 'user': 'x' * 20_000})
    status, _, reply, _ = request(t.main.port, 'POST', '/v1/completions', body,
                                  {'Content-Type': 'application/x-www-form-urlencoded', **AUTH})
    t.status_is(status, 200, f'{len(body)} bytes as application/x-www-form-urlencoded')


# CORS --------------------------------------------------------------------
@case(0, 'CORS: preflight and allowed origins with --cors-origin; nothing without it', own_server=True)
def cors(t):
    origin = 'http://app.example'
    preflight = {'Origin': origin, 'Access-Control-Request-Method': 'POST',
                 'Access-Control-Request-Headers': 'authorization, content-type, x-stainless-os'}
    s = t.start(['--api-key', KEY, '--cors-origin', origin])
    try:
        status, h, _, _ = request(s.port, 'OPTIONS', '/v1/chat/completions', headers=preflight)
        t.status_is(status, 204, 'preflight with --cors-origin')
        expect(h.get('access-control-allow-origin') == origin, h)
        expect('POST' in h.get('access-control-allow-methods', ''), h)
        expect('x-stainless-os' in h.get('access-control-allow-headers', ''), h)
        status, h, _, _ = post(s.port, '/v1/completions', SMALL_COMPLETION, {'Origin': origin})
        expect(status == 200 and h.get('access-control-allow-origin') == origin, (status, h))
        status, h, _, _ = post(s.port, '/v1/completions', SMALL_COMPLETION, {'Origin': 'http://evil.example'})
        expect(status == 200 and 'access-control-allow-origin' not in h, (status, h))
    finally:
        expect(s.stop() == 0, s.log())
    status, h, _, _ = request(t.main.port, 'OPTIONS', '/v1/chat/completions', headers=preflight)
    t.note(f'preflight without --cors-origin: status {status}')
    expect(status in (401, 405) and 'access-control-allow-origin' not in h, (status, h))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('exe')
    p.add_argument('--sanitized', action='store_true', help='the server is built with ASan/UBSan')
    p.add_argument('--only', default='', help='run the cases whose title contains this')
    p.add_argument('--report', action='store_true', help='measure and go on past failed expectations')
    p.add_argument('--scale', choices=['ci', 'issue'], default='ci')
    p.add_argument('--fresh', action='store_true', help='a new server for every case')
    p.add_argument('--legacy', action='store_true', help='only the flags an older lamina-serve knows')
    opts = p.parse_args()

    cases = [c for c in CASES if opts.only.lower() in f'row {c[0]}: {c[1]}'.lower()]
    print(f'1..{len(cases)}', flush=True)
    suite = Suite(opts)
    failed = 0
    started = time.monotonic()
    for i, (row, title, fn, own_server) in enumerate(cases, 1):
        suite.notes = []
        t0 = time.monotonic()
        ok, why, skipped = True, '', ''
        try:
            if suite.main is None or opts.fresh:
                if suite.main is not None:
                    suite.stop_main()
                suite.start_main()
            fn(suite)
            if not own_server or row == 0:
                suite.assert_serving()
        except Skip as e:
            skipped = str(e)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the next case still runs
            ok = False
            why = f'{type(e).__name__}: {e}' if isinstance(e, Failure) else traceback.format_exc()
            if suite.main is not None and suite.main.proc.poll() is not None:
                why += f'\nthe server exited ({suite.main.proc.returncode}):\n{suite.main.log()}'
                suite.main = None
        failed += not ok
        label = f'row {row}: {title}' if row else title
        print(f'{"ok" if ok else "not ok"} {i} - {label}' + (f' # SKIP {skipped}' if skipped else ''), flush=True)
        print(f'#   took {time.monotonic() - t0:.1f} s', flush=True)
        for n in suite.notes:
            print(f'#   {n}', flush=True)
        if not ok:
            for line in why.strip().splitlines():
                print(f'#   {line}', flush=True)
    if suite.main is not None:
        code, log = suite.stop_main()
        if code != 0:
            failed += 1
            print(f'# the server exited {code} after SIGTERM:\n' + '\n'.join('#   ' + l for l in log.splitlines()))
    print(f'# {len(cases) - failed} of {len(cases)} passed in {time.monotonic() - started:.1f} s', flush=True)
    return 0 if opts.report or failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
