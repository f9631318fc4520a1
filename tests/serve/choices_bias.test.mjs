// n > 1 choices and logit_bias through the official openai suite.client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { serverForTests } from './server.mjs';

const MODEL = 'stories260K';
const suite = serverForTests(['--parallel', '4']);

const prompt = 'Once upon a time, there was a little';
const messages = [{ role: 'user', content: 'Tell me a story about a dog.' }];

async function collect(streamPromise) {
  const chunks = [];
  for await (const chunk of await streamPromise) chunks.push(chunk);
  return chunks;
}

test('n = 3: three choices, each the single request with seed + i; the prompt counted once', async () => {
  const request = { model: MODEL, prompt, max_tokens: 10, temperature: 1, seed: 77 };
  const r = await suite.client.completions.create({ ...request, n: 3 });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const singles = [];
  for (let i = 0; i < 3; i++) singles.push(await suite.client.completions.create({ ...request, seed: 77 + i }));
  for (let i = 0; i < 3; i++) assert.equal(r.choices[i].text, singles[i].choices[0].text, `choice ${i}`);
  assert.equal(r.usage.prompt_tokens, singles[0].usage.prompt_tokens);
  const completion = singles.reduce((sum, s) => sum + s.usage.completion_tokens, 0);
  assert.equal(r.usage.completion_tokens, completion);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + completion);
  assert.ok(new Set(r.choices.map((c) => c.text)).size > 1, 'different seeds, different texts');
});

test('n = 3 streamed (chat): per-choice deltas reassemble to the non-streamed choices', async () => {
  const request = { model: MODEL, messages, max_tokens: 12, temperature: 1, seed: 5, n: 3 };
  const whole = await suite.client.chat.completions.create(request);
  assert.equal(whole.choices.length, 3);
  const chunks = await collect(
    suite.client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }),
  );
  const texts = ['', '', ''];
  const roles = [0, 0, 0];
  const finishes = [null, null, null];
  for (const c of chunks.slice(0, -1)) {
    assert.equal(c.choices.length, 1);
    const choice = c.choices[0];
    if (choice.delta.role) roles[choice.index] += 1;
    texts[choice.index] += choice.delta.content ?? '';
    if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
  }
  assert.deepEqual(roles, [1, 1, 1]);
  for (let i = 0; i < 3; i++) {
    assert.equal(texts[i], whole.choices[i].message.content, `choice ${i}`);
    assert.equal(finishes[i], whole.choices[i].finish_reason);
  }
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  // The second run may find the prompt in the prefix cache: only cached_tokens may differ.
  for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(usage.usage[key], whole.usage[key]);
});

test('n above the slots or 16 is a clear 400', async () => {
  for (const n of [5, 17]) {
    await assert.rejects(
      suite.client.completions.create({ model: MODEL, prompt, n, max_tokens: 2 }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'n',
    );
  }
});

test('logit_bias: +100 forces a token, -100 forbids it', async () => {
  const forced = await suite.client.completions.create({
    model: MODEL, prompt, max_tokens: 6, temperature: 1, seed: 3, logit_bias: { 300: 100 }, logprobs: 1,
  });
  const piece = (await postJson('/detokenize', { tokens: [300] })).content;
  assert.equal(forced.usage.completion_tokens, 6);
  // The piece as the completion shows it (detokenize drops a first token's leading space).
  const shown = forced.choices[0].logprobs.tokens;
  assert.deepEqual(shown, Array(6).fill(shown[0]));
  assert.ok(piece.length > 0);
  assert.equal(shown[0].trim(), piece.trim());
  for (const lp of forced.choices[0].logprobs.token_logprobs) assert.ok(lp > -1e-3, `forced logprob ${lp}`);

  // The greedy first token, found by its id, then forbidden.
  const greedy = await suite.client.completions.create({ model: MODEL, prompt, max_tokens: 1, temperature: 0 });
  const text = greedy.choices[0].text;
  const pieces = (await postJson('/tokenize', { content: prompt + text, add_special: false, with_pieces: true })).tokens;
  const first = pieces.at(-1);
  assert.equal(first.piece, text, `the prompt and its greedy token re-tokenize to ${JSON.stringify(pieces)}`);
  const avoided = await suite.client.completions.create({
    model: MODEL, prompt, max_tokens: 4, temperature: 0, logprobs: 1, logit_bias: { [first.id]: -100 },
  });
  for (const t of avoided.choices[0].logprobs.tokens) assert.notEqual(t, first.piece);
});

test('logit_bias naming a token outside the vocabulary or out of range is a clear 400', async () => {
  for (const bias of [{ 99999999: 1 }, { 1: 150 }, { abc: 1 }]) {
    await assert.rejects(
      suite.client.completions.create({ model: MODEL, prompt, max_tokens: 1, logit_bias: bias }),
      (e) => e instanceof OpenAI.BadRequestError && /logit_bias/.test(e.message + e.param),
    );
  }
});

async function postJson(path, body) {
  const r = await fetch(`${suite.server.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, path);
  return r.json();
}
