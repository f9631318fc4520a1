// Starting lamina-serve for a test file, and plain-HTTP helpers.
import { spawn } from 'node:child_process';
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

// Starts the server on a free port with `args`; resolves once it listens.
// One compute thread: the default model is tiny, and the test machines are
// shared, where threads waiting on each other at every layer lose much time.
export async function startServer(args = []) {
  const exe = process.env.LAMINA_SERVE_EXE;
  if (!exe) throw new Error('LAMINA_SERVE_EXE is not set');
  const proc = spawn(exe, ['--host', '127.0.0.1', '--port', '0', '--threads', '1', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`lamina-serve did not start within 30 s:\n${log}`)), 30000);
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`lamina-serve exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
  return {
    url,
    proc,
    exited,
    log: () => log,
    // Sends `signal` and resolves with {code, signal} once the process has exited.
    async stop(sig = 'SIGTERM') {
      proc.kill(sig);
      return exited;
    },
  };
}

// POSTs `body` (an object, or a string/Buffer sent as is); resolves with status, headers and parsed JSON.
export async function post(url, body, headers = {}) {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: payload });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

// The number of tokens /tokenize gives `text` (special tokens parsed, none added).
export async function tokenCount(serverUrl, text) {
  const r = await post(`${serverUrl}/tokenize`, { content: text });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json.tokens.length;
}

export async function get(url, headers = {}) {
  const res = await fetch(url, { headers });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON (e.g. /metrics)
  }
  return { status: res.status, headers: res.headers, text, json };
}

// Reads a Server-Sent Events response: the data of each event in order
// (parsed JSON, or the string '[DONE]'), and the comment lines seen.
export async function readEvents(res) {
  const events = [];
  let comments = 0;
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments++;
        else if (line.startsWith('data: ')) events.push(line === 'data: [DONE]' ? '[DONE]' : JSON.parse(line.slice(6)));
        else throw new Error(`unexpected SSE line: ${JSON.stringify(line)}`);
      }
    }
  }
  if (buffer !== '') throw new Error(`stream ended inside an event: ${JSON.stringify(buffer)}`);
  return { events, comments };
}

// POSTs a streaming request and reads all its events.
export async function stream(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return readEvents(res);
}

// The text of a streamed chat or completion.
export function streamedText(events) {
  let text = '';
  for (const e of events) {
    if (e === '[DONE]' || !e.choices) continue;
    for (const c of e.choices) text += c.delta ? (c.delta.content ?? '') : (c.text ?? '');
  }
  return text;
}

// An openai client's chat stream, reassembled: the content, the tool calls
// (from their deltas: id, type and name first, then argument fragments) and
// the finish reason of its first choice.
export async function readChatStream(stream) {
  let content = '';
  let finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    for (const d of c.delta.tool_calls ?? []) {
      if (d.id) calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
      calls[d.index].function.arguments += d.function.arguments ?? '';
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  return { content, calls, finish };
}

// Prometheus samples of /metrics: series (with labels) -> number.
export function parseMetrics(text) {
  const samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-z_:][a-z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    samples.set(m[1], Number(m[2]));
  }
  return samples;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A server for the tests of one file, with the openai client on it: started
// before them, stopped after them, and its exit after SIGTERM checked.
export function serverForTests(args = []) {
  const suite = { server: null, client: null };
  before(async () => {
    suite.server = await startServer(args);
    suite.client = new OpenAI({ baseURL: `${suite.server.url}/v1`, apiKey: 'not-checked', maxRetries: 0 });
  });
  after(async () => {
    const { code } = await suite.server.stop();
    assert.equal(code, 0, `exit code after SIGTERM; log:\n${suite.server.log()}`);
  });
  return suite;
}
