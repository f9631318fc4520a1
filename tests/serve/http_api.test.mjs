// lamina-serve over raw HTTP: error statuses and shapes, hostile input,
// authentication, the queue limit, /metrics, /health and /tokenize.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { startServer, post, get, parseMetrics, stream } from './server.mjs';

const MAX_BODY = 65536;
let server;
let chatUrl;
let completionsUrl;

before(async () => {
  server = await startServer(['--parallel', '2', '--max-body-size', String(MAX_BODY)]);
  chatUrl = `${server.url}/v1/chat/completions`;
  completionsUrl = `${server.url}/v1/completions`;
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `exit code after SIGTERM; log:\n${server.log()}`);
});

const user = [{ role: 'user', content: 'Hi' }];

function assertError(r, status, code) {
  assert.equal(r.status, status, JSON.stringify(r.json));
  const e = r.json.error;
  assert.ok(e, `no error member in ${JSON.stringify(r.json)}`);
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, 'string');
  assert.ok('param' in e && 'code' in e);
  if (code !== undefined) assert.equal(e.code, code);
  return e;
}

// Sends raw bytes over a socket and returns the status line's code.
function rawStatus(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let reply = '';
    socket.on('data', (d) => (reply += d));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

test('health and models', async () => {
  const h = await get(`${server.url}/health`);
  assert.equal(h.status, 200);
  assert.deepEqual(h.json, { status: 'ok' });
  const m = await get(`${server.url}/v1/models/stories260K`);
  assert.equal(m.status, 200);
  assert.ok(m.json.meta.n_ctx > 0);
  assertError(await get(`${server.url}/v1/models/nope`), 404, 'model_not_found');
});

test('400: malformed JSON, invalid UTF-8, wrong types, huge numbers, deep nesting', async () => {
  assertError(await post(chatUrl, '{"messages": [}'), 400);
  assertError(await post(chatUrl, ''), 400);
  assertError(await post(chatUrl, '[1, 2, 3]'), 400);
  const badUtf8 = Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]);
  assertError(await post(chatUrl, badUtf8), 400);
  assert.equal(assertError(await post(chatUrl, { messages: user, temperature: 'hot' }), 400, 'invalid_type').param, 'temperature');
  assert.equal(assertError(await post(chatUrl, { messages: 'Hi' }), 400).param, 'messages');
  assert.equal(assertError(await post(chatUrl, { messages: user, max_tokens: 1e300 }), 400).param, 'max_tokens');
  assertError(await post(chatUrl, '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1e999}'), 400);
  assert.equal(assertError(await post(chatUrl, '{"messages": [{"role": "user", "content": "Hi"}], "seed": 123456789012345678901234567890}'), 400).param, 'seed');
  assertError(await post(chatUrl, `{"messages": ${'['.repeat(20000)}${']'.repeat(20000)}}`), 400);
  assert.equal(assertError(await post(chatUrl, { messages: user, n: 3 }), 400).param, 'n');
  assert.equal(assertError(await post(chatUrl, { messages: [{ role: 'robot', content: 'x' }] }), 400).param, 'messages[0].role');
  assert.equal(assertError(await post(completionsUrl, { prompt: [1, 2, 1e9] }), 400).param, 'prompt');
  assert.equal(assertError(await post(completionsUrl, { prompt: 'x', logprobs: 99 }), 400).param, 'logprobs');
  assert.equal(assertError(await post(completionsUrl, { prompt: Array(5000).fill(100) }), 400, 'context_length_exceeded').param, 'prompt');
  // The server is still healthy.
  assert.equal((await get(`${server.url}/health`)).status, 200);
});

test('404 for unknown routes and models, 405 for the wrong method', async () => {
  const e = assertError(await post(`${server.url}/v1/engines`, {}), 404, 'unknown_url');
  assert.match(e.message, /POST \/v1\/engines/);
  assertError(await post(chatUrl, { model: 'gpt-4o', messages: user }), 404, 'model_not_found');
  const wrong = await get(chatUrl);
  assertError(wrong, 405, 'method_not_allowed');
  assert.equal(wrong.headers.get('allow'), 'POST');
});

test('413 when the body is larger than --max-body-size', async () => {
  const big = JSON.stringify({ prompt: 'a'.repeat(MAX_BODY + 10) });
  assertError(await post(completionsUrl, big), 413, 'request_too_large');
  assert.equal((await post(completionsUrl, { prompt: 'a'.repeat(1000), max_tokens: 1 })).status, 200);
});

test('garbage and truncated requests on the socket do not harm the server', async () => {
  const port = Number(new URL(server.url).port);
  const answers = [
    await rawStatus(port, 'THIS IS NOT HTTP\r\n\r\n'),
    await rawStatus(port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"prompt"`),
    await rawStatus(port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n`),
    await rawStatus(port, `GET /${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
  ];
  // Each is refused (4xx) or the connection closed without an answer (0).
  for (const status of answers) assert.ok(status === 0 || (status >= 400 && status < 500), answers.join(','));
  assert.equal((await get(`${server.url}/health`)).status, 200);
});

test('tokenize and detokenize round trip', async () => {
  const text = 'Once upon a time, Lily saw a big red ball.';
  const t = await post(`${server.url}/tokenize`, { content: text });
  assert.equal(t.status, 200);
  assert.ok(t.json.tokens.length > 5);
  assert.ok(t.json.tokens.every(Number.isInteger));
  const d = await post(`${server.url}/detokenize`, { tokens: t.json.tokens });
  assert.equal(d.status, 200);
  assert.equal(d.json.content, text);
  const special = await post(`${server.url}/tokenize`, { content: text, add_special: true, with_pieces: true });
  assert.equal(special.json.tokens.length, t.json.tokens.length + 1);
  assert.equal(special.json.tokens.slice(1).map((p) => p.piece).join('').trim(), text);
  assertError(await post(`${server.url}/detokenize`, { tokens: [1, 99999999] }), 400);
  assertError(await post(`${server.url}/tokenize`, { content: 5 }), 400);
});

test('/metrics is Prometheus text with the request counters, latency histograms and gauges', async () => {
  await stream(chatUrl, { messages: user, max_tokens: 5, temperature: 0, stream: true });
  const m = await get(`${server.url}/metrics`);
  assert.equal(m.status, 200);
  assert.match(m.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  for (const line of m.text.split('\n').filter((l) => l.startsWith('#'))) {
    assert.match(line, /^# (HELP \S+ .+|TYPE \S+ (counter|gauge|histogram))$/);
  }
  const s = parseMetrics(m.text);
  assert.ok(s.get('lamina_http_requests_total{route="/v1/chat/completions",status="200"}') >= 1);
  assert.ok(s.get('lamina_http_requests_total{route="/v1/chat/completions",status="400"}') >= 1);
  assert.ok(s.get('lamina_completion_requests_total{endpoint="chat_completions",finish_reason="length"}') >= 1);
  assert.ok(s.get('lamina_generated_tokens_total') >= 5);
  assert.ok(s.get('lamina_time_to_first_token_seconds_count') >= 1);
  assert.equal(s.get('lamina_time_to_first_token_seconds_bucket{le="+Inf"}'), s.get('lamina_time_to_first_token_seconds_count'));
  assert.ok(s.get('lamina_inter_token_latency_seconds_count') >= 4);
  for (const gauge of ['lamina_queue_depth', 'lamina_active_sequences', 'lamina_batch_tokens', 'lamina_kv_cache_usage_ratio']) {
    assert.ok(s.has(gauge), gauge);
  }
  assert.equal(s.get('lamina_sequence_slots'), 2);
});

test('a client that disconnects mid-stream cancels its request', async () => {
  const metricsOf = async () => parseMetrics((await get(`${server.url}/metrics`)).text);
  const cancelled = 'lamina_completion_requests_total{endpoint="completions",finish_reason="cancelled"}';
  const before = (await metricsOf()).get(cancelled) ?? 0;
  const controller = new AbortController();
  const res = await fetch(completionsUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 100000, ignore_eos: true, stream: true }),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  await reader.read();
  controller.abort();
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 50));
    after = (await metricsOf()).get(cancelled) ?? 0;
  }
  assert.equal(after, before + 1);
  const s = await metricsOf();
  assert.equal(s.get('lamina_active_sequences'), 0);
  assert.equal(s.get('lamina_http_requests_in_flight'), 0);
});

test('401 without the API key, 200 with it; /health stays open', async () => {
  const keyed = await startServer(['--api-key', 'sekret']);
  try {
    const url = `${keyed.url}/v1/chat/completions`;
    const body = { messages: user, max_tokens: 2 };
    assertError(await post(url, body), 401, 'invalid_api_key');
    assertError(await post(url, body, { Authorization: 'Bearer wrong' }), 401, 'invalid_api_key');
    assertError(await post(url, body, { Authorization: 'sekret' }), 401, 'invalid_api_key');
    assert.equal((await post(url, body, { Authorization: 'Bearer sekret' })).status, 200);
    assert.equal((await get(`${keyed.url}/health`)).status, 200);
    assert.equal((await get(`${keyed.url}/metrics`)).status, 401);
    const client = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(client.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    const good = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
    assert.equal((await good.models.list()).data.length, 1);
  } finally {
    assert.equal((await keyed.stop()).code, 0);
  }
});

test('429 with Retry-After when every slot is busy and the queue is full', async () => {
  const small = await startServer(['--parallel', '1', '--max-queue', '1']);
  try {
    const url = `${small.url}/v1/completions`;
    const body = { prompt: 'Once upon a time', max_tokens: 1500, ignore_eos: true, temperature: 0 };
    const results = await Promise.all(Array.from({ length: 12 }, () => post(url, body)));
    const statuses = results.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 200 || s === 429), statuses.join(','));
    assert.ok(statuses.filter((s) => s === 200).length >= 2, statuses.join(','));
    const refused = results.filter((r) => r.status === 429);
    assert.ok(refused.length >= 1, statuses.join(','));
    for (const r of refused) {
      assertError(r, 429, 'queue_full');
      assert.equal(r.headers.get('retry-after'), '1');
    }
    const s = parseMetrics((await get(`${small.url}/metrics`)).text);
    assert.equal(s.get('lamina_rejected_requests_total'), refused.length);
  } finally {
    assert.equal((await small.stop()).code, 0);
  }
});

test('a connection that sends nothing is closed after --timeout', async () => {
  const quick = await startServer(['--timeout', '1']);
  try {
    const port = Number(new URL(quick.url).port);
    const started = Date.now();
    await new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('close', resolve);
      socket.on('error', reject);
    });
    const seconds = (Date.now() - started) / 1000;
    assert.ok(seconds >= 0.9 && seconds < 10, `closed after ${seconds} s`);
    assert.equal((await get(`${quick.url}/health`)).status, 200);
  } finally {
    assert.equal((await quick.stop()).code, 0);
  }
});
