"""HTTP clients that misbehave, for hostile_clients.py: a lamina-serve
process to attack, requests sent byte by byte as written, floods that stop at
the first answer, slowloris connections and trickled requests. Python's
standard library only; 127.0.0.1 only."""
import asyncio
import collections
import http.client
import json
import select
import signal
import socket
import subprocess
import threading
import time
import zlib

KEY = 'sekret'
AUTH = {'Authorization': f'Bearer {KEY}'}


class Server:
    """lamina-serve on a free port of 127.0.0.1; its log is drained by a thread."""

    def __init__(self, exe, args, env=None, preexec_fn=None, port=0):
        self.proc = subprocess.Popen(
            [exe, '--host', '127.0.0.1', '--port', str(port), '--threads', '1', *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=env, preexec_fn=preexec_fn)
        self.head = []
        self.tail = collections.deque(maxlen=200)
        self.port = None
        self.listening = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors='replace').rstrip('\n')
            if len(self.head) < 20:
                self.head.append(line)
            self.tail.append(line)
            if 'listening on http://' in line and self.port is None:
                self.port = int(line.rsplit(':', 1)[1])
                self.listening.set()

    def wait_listening(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.listening.wait(0.05):
                return True
            if self.proc.poll() is not None:
                time.sleep(0.1)  # let the drain thread read the last lines
                return False
        return False

    def memory_mb(self, field):
        with open(f'/proc/{self.proc.pid}/status') as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) / 1024
        return 0.0

    def rss_mb(self):
        return self.memory_mb('VmRSS')

    def peak_rss_mb(self):
        return self.memory_mb('VmHWM')

    def log(self):
        return '\n'.join(self.head + ['...'] + list(self.tail)[-40:])

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def request(port, method, path, body=None, headers=None, timeout=10.0):
    """One request on its own connection: (status, headers, body, seconds);
    status 0 when no answer came within `timeout` or the connection broke."""
    started = time.monotonic()
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data, time.monotonic() - started
    except (OSError, http.client.HTTPException):
        return 0, {}, b'', time.monotonic() - started
    finally:
        conn.close()


def post(port, path, obj, headers=None, timeout=10.0):
    body = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
    return request(port, 'POST', path, body, {'Content-Type': 'application/json', **AUTH, **(headers or {})}, timeout)


def raw_exchange(port, data, timeout=5.0, half_close=False):
    """Sends `data` and reads until the server closes or `timeout`: (bytes, seconds)."""
    started = time.monotonic()
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        got = b''
        try:
            while time.monotonic() - started < timeout:
                d = s.recv(65536)
                if not d:
                    break
                got += d
        except (socket.timeout, ConnectionResetError):
            pass
    return got, time.monotonic() - started


def statuses(reply):
    """The status codes of the responses in `reply`, in order (bodies framed
    by Content-Length; a response without one ends the list)."""
    out = []
    while reply.startswith(b'HTTP/1.') and reply[9:12].isdigit():
        out.append(int(reply[9:12]))
        end = reply.find(b'\r\n\r\n')
        if end < 0:
            break
        head = reply[:end].lower()
        i = head.find(b'content-length:')
        length = int(head[i + 15:].split(b'\r\n')[0]) if i >= 0 else (0 if out[-1] == 100 else None)
        if length is None:
            break
        reply = reply[end + 4 + length:]
    return out


def first_status(reply):
    s = statuses(reply)
    return s[0] if s else 0


def response_complete(buf):
    """True once `buf` holds a whole response with a Content-Length body."""
    end = buf.find(b'\r\n\r\n')
    if end < 0:
        return False
    head = buf[:end].lower()
    i = head.find(b'content-length:')
    if i < 0:
        return True
    n = int(head[i + 15:].split(b'\r\n')[0])
    return len(buf) >= end + 4 + n


def flood(port, head, chunk, total, timeout):
    """Sends `head` then `chunk` repeatedly (up to `total` bytes) while
    reading: stops once a response has come or the server closed.
    Returns (status, bytes sent, seconds to the answer)."""
    started = time.monotonic()
    s = socket.create_connection(('127.0.0.1', port))
    s.setblocking(False)
    pending, sent, got, answered = memoryview(head), 0, b'', None
    sending = True
    try:
        while time.monotonic() - started < timeout:
            r, w, _ = select.select([s], [s] if sending else [], [], 0.05)
            if r:
                try:
                    d = s.recv(65536)
                except (ConnectionResetError, BlockingIOError):
                    d = b''
                if not d:
                    break
                got += d
                if response_complete(got):
                    answered = time.monotonic() - started
                    break
            if w and sending:
                if not pending:
                    if sent >= total:
                        sending = False
                        continue
                    pending = memoryview(chunk)
                try:
                    n = s.send(pending)
                    sent += n
                    pending = pending[n:]
                except (BrokenPipeError, ConnectionResetError):
                    sending = False
                except BlockingIOError:
                    pass
    finally:
        s.close()
    return first_status(got), sent, answered if answered is not None else time.monotonic() - started


def metrics(port):
    status, _, body, _ = request(port, 'GET', '/metrics', headers=AUTH)
    assert status == 200, f'/metrics answered {status}'
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith('#'):
            name, value = line.rsplit(' ', 1)
            out[name] = float(value)
    return out


def gzip_bomb(inflated):
    """Gzip of `inflated` bytes of spaces inside a JSON string, made a block at a time."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [z.compress(b'{"prompt":"')]
    block = b' ' * (1 << 20)
    for _ in range(inflated >> 20):
        parts.append(z.compress(block))
    parts.append(z.compress(b'","max_tokens":1}'))
    parts.append(z.flush())
    return b''.join(parts)


async def slowloris(port, n, interval, window, probe):
    """`n` connections trickle a header line every `interval` s while
    `probe` runs; returns (connections opened, probe's result)."""
    stop = asyncio.Event()
    opened = 0

    async def trickler(i):
        nonlocal opened
        try:
            reader, writer = await asyncio.open_connection('127.0.0.1', port)
        except OSError:
            return
        opened += 1
        try:
            writer.write(b'POST /v1/completions HTTP/1.1\r\nHost: x\r\n')
            await writer.drain()
            k = 0
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), interval)
                except asyncio.TimeoutError:
                    pass
                writer.write(b'X-%d: %d\r\n' % (i, k))
                k += 1
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    tasks = [asyncio.create_task(trickler(i)) for i in range(n)]
    await asyncio.sleep(0.5)  # let them connect and start
    result = await probe(window)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return opened, result


async def timed_request(port, raw, timeout):
    """A raw request on a fresh connection: (status, seconds), status 0 when
    no answer came within `timeout`."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection('127.0.0.1', port), timeout)
        writer.write(raw)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), timeout - (time.monotonic() - started))
        writer.close()
        return first_status(head), time.monotonic() - started
    except (asyncio.TimeoutError, OSError, asyncio.IncompleteReadError):
        return 0, time.monotonic() - started


def trickle(port, first, piece, every=0.1, pieces=40):
    """Sends `first`, then `piece` every `every` s until the server answers:
    (the answer, seconds)."""
    started = time.monotonic()
    got = b''
    with socket.create_connection(('127.0.0.1', port)) as c:
        c.settimeout(10)
        try:
            c.sendall(first)
            for _ in range(pieces):
                c.sendall(piece)
                if select.select([c], [], [], every)[0]:
                    break
            got = c.recv(4096)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
    return got, time.monotonic() - started


def raw_post(path, body, extra=b'', version=b'1.1', close=True):
    return (b'POST ' + path + b' HTTP/' + version + b'\r\nHost: x\r\nAuthorization: Bearer ' + KEY.encode() +
            b'\r\n' + extra + (b'Connection: close\r\n' if close else b'') +
            b'Content-Length: ' + str(len(body)).encode() + b'\r\n\r\n' + body)
