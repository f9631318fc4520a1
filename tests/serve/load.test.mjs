// lamina-serve under concurrent load: batch invariance (the same text alone
// and among 31 other requests), many streaming clients with no errors, and a
// graceful shutdown with streams in flight.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, get, stream, streamedText, parseMetrics, readEvents } from './server.mjs';

let server;

before(async () => {
  server = await startServer(['--parallel', '8', '--max-queue', '300']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `exit code after SIGTERM; log:\n${server.log()}`);
});

const prompts = [
  'Once upon a time', 'The little dog', 'Lily and Tom went to the park', 'One day, a bird',
  'The sun was shining', 'Tim had a red ball', 'In a small house', 'Mom said',
];

// The 31 other requests: varied prompts, lengths, sampling and streaming.
function otherRequests(base) {
  return Array.from({ length: 31 }, (_, i) => {
    const body = {
      prompt: prompts[i % prompts.length] + ' '.repeat(i % 3),
      max_tokens: 8 + ((i * 7) % 57),
      temperature: i % 2 ? 0 : 0.8,
      seed: i,
      stream: i % 3 === 0,
    };
    return body.stream ? stream(`${base}/v1/completions`, body) : post(`${base}/v1/completions`, body);
  });
}

test('a greedy and a seeded request give byte-identical text alone and among 31 others', async () => {
  const url = `${server.url}/v1/completions`;
  const greedy = { prompt: 'Once upon a time, there was a girl named', max_tokens: 64, temperature: 0 };
  const seeded = { prompt: 'The cat', max_tokens: 64, temperature: 1.0, seed: 777 };
  const chat = { messages: [{ role: 'user', content: 'Tell me about a dog.' }], max_tokens: 48, temperature: 0 };
  const alone = {
    greedy: (await post(url, greedy)).json.choices[0].text,
    seeded: (await post(url, seeded)).json.choices[0].text,
    chat: (await post(`${server.url}/v1/chat/completions`, chat)).json.choices[0].message.content,
  };
  for (let round = 0; round < 2; round++) {
    const others = otherRequests(server.url);
    const mine = [
      post(url, greedy),
      post(url, seeded),
      post(`${server.url}/v1/chat/completions`, chat),
      stream(url, { ...greedy, stream: true }),
    ];
    const [g, s, c, gs] = await Promise.all(mine);
    const settled = await Promise.all(others);
    for (const o of settled) {
      if ('status' in o) assert.equal(o.status, 200, JSON.stringify(o.json));
      else assert.equal(o.events.at(-1), '[DONE]');
    }
    assert.equal(g.json.choices[0].text, alone.greedy);
    assert.equal(s.json.choices[0].text, alone.seeded);
    assert.equal(c.json.choices[0].message.content, alone.chat);
    assert.equal(streamedText(gs.events), alone.greedy);
  }
});

test('64 streaming clients for a few seconds: no errors, server healthy after', async () => {
  const url = `${server.url}/v1/chat/completions`;
  const deadline = Date.now() + 3000;
  let completed = 0;
  const client = async (i) => {
    while (Date.now() < deadline) {
      const { events } = await stream(url, {
        messages: [{ role: 'user', content: prompts[i % prompts.length] }],
        max_tokens: 16 + (i % 32),
        temperature: 0.7,
        stream: true,
      });
      assert.equal(events.at(-1), '[DONE]');
      const reasons = events.filter((e) => e !== '[DONE]').map((e) => e.choices[0]?.finish_reason).filter(Boolean);
      assert.equal(reasons.length, 1);
      assert.ok(['stop', 'length'].includes(reasons[0]));
      completed++;
    }
  };
  await Promise.all(Array.from({ length: 64 }, (_, i) => client(i)));
  assert.ok(completed >= 64, `${completed} requests`);
  assert.equal((await get(`${server.url}/health`)).status, 200);
  const s = parseMetrics((await get(`${server.url}/metrics`)).text);
  assert.equal(s.get('lamina_http_requests_in_flight'), 0);
  assert.equal(s.get('lamina_queue_depth'), 0);
  assert.equal(s.get('lamina_http_requests_total{route="/v1/chat/completions",status="200"}') >= completed, true);
});

test('256 concurrent streams are all held and completed', async () => {
  const url = `${server.url}/v1/completions`;
  const started = Date.now();
  const results = await Promise.all(
    Array.from({ length: 256 }, (_, i) => stream(url, { prompt: prompts[i % prompts.length], max_tokens: 32, ignore_eos: true, stream: true })),
  );
  for (const { events } of results) {
    assert.equal(events.at(-1), '[DONE]');
    assert.equal(events.at(-2).choices[0].finish_reason, 'length');
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(`256 streams x 32 tokens in ${seconds.toFixed(2)} s (${((256 * 32) / seconds).toFixed(0)} tokens/s)`);
});

test('SIGTERM: streams in flight end cleanly, then the server exits 0', async (t) => {
  for (const [label, timeout] of [['finishing', '30'], ['cancelling', '0']]) {
    await t.test(label, async () => {
      const s = await startServer(['--parallel', '2', '--shutdown-timeout', timeout]);
      const body = { prompt: 'Once upon a time', max_tokens: 600, ignore_eos: true, stream: true };
      const responses = await Promise.all(
        Array.from({ length: 4 }, () => fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })),
      );
      const reading = responses.map((r) => readEvents(r));
      const exit = s.stop('SIGTERM');
      const streams = await Promise.all(reading);
      assert.deepEqual(await exit, { code: 0, signal: null }, s.log());
      for (const { events } of streams) {
        assert.equal(events.at(-1), '[DONE]');
        const last = events.at(-2);
        if (timeout === '0' && last.error) {
          assert.equal(last.error.code, 'server_shutting_down');
        } else {
          assert.equal(last.choices[0].finish_reason, 'length');
        }
      }
      if (timeout === '30') {
        for (const { events } of streams) assert.equal(events.at(-2).choices[0].finish_reason, 'length');
      }
    });
  }
});
