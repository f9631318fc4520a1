// lamina-serve through the official openai client: chat and completions,
// streamed and not, and structured outputs, against the bundled default model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, post } from './server.mjs';

const MODEL = 'stories260K';
let server;
let client;

before(async () => {
  server = await startServer(['--parallel', '4']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-checked', maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, `exit code after SIGTERM; log:\n${server.log()}`);
});

const storyPrompt = 'Once upon a time, there was a little';
const chatMessages = [
  { role: 'system', content: 'You tell short stories.' },
  { role: 'user', content: [{ type: 'text', text: 'Tell me a story ' }, { type: 'text', text: 'about a cat.' }] },
];

function checkUsage(usage, completionTokens) {
  assert.ok(usage.prompt_tokens > 0);
  assert.equal(usage.completion_tokens, completionTokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

async function collect(streamPromise) {
  const chunks = [];
  for await (const chunk of await streamPromise) chunks.push(chunk);
  return chunks;
}

test('models: the default model is listed under its alias', async () => {
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [MODEL]);
  assert.equal(page.data[0].object, 'model');
  const one = await client.models.retrieve(MODEL);
  assert.equal(one.id, MODEL);
});

test('chat: non-streamed completion stops at max_tokens with "length"', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: chatMessages, max_tokens: 12, temperature: 0 });
  assert.match(r.id, /^chatcmpl-[0-9A-Za-z]{29}$/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL);
  assert.ok(Math.abs(r.created - Date.now() / 1000) < 60);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.choices[0].logprobs, null);
  checkUsage(r.usage, 12);
});

test('chat: the streamed text equals the non-streamed text, role first, usage last', async () => {
  const request = { model: MODEL, messages: chatMessages, max_completion_tokens: 20, temperature: 0 };
  const whole = await client.chat.completions.create(request);
  const chunks = await collect(
    client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }),
  );
  assert.ok(chunks.length >= 3);
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
    assert.match(c.id, /^chatcmpl-/);
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const usageChunk = chunks.at(-1);
  assert.deepEqual(usageChunk.choices, []);
  checkUsage(usageChunk.usage, whole.usage.completion_tokens);
  assert.equal(usageChunk.usage.prompt_tokens, whole.usage.prompt_tokens);
  const last = chunks.at(-2);
  assert.equal(last.choices[0].finish_reason, whole.choices[0].finish_reason);
  assert.deepEqual(last.choices[0].delta, {});
  for (const c of chunks.slice(0, -2)) assert.equal(c.choices[0].finish_reason, null);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, whole.choices[0].message.content);
});

test('completions: non-streamed and streamed agree; "length" at max_tokens', async () => {
  const request = { model: MODEL, prompt: storyPrompt, max_tokens: 24, temperature: 0 };
  const whole = await client.completions.create(request);
  assert.match(whole.id, /^cmpl-[0-9A-Za-z]{29}$/);
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.ok(whole.choices[0].text.length > 0);
  checkUsage(whole.usage, 24);
  const chunks = await collect(client.completions.create({ ...request, stream: true }));
  for (const c of chunks) assert.equal(c.object, 'text_completion');
  assert.equal(chunks.map((c) => c.choices[0].text).join(''), whole.choices[0].text);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  assert.equal(chunks.at(-1).usage, undefined);
});

test('completions: a stop string ends with "stop" and is not part of the text', async () => {
  const base = await client.completions.create({ model: MODEL, prompt: storyPrompt, max_tokens: 48, temperature: 0 });
  const text = base.choices[0].text;
  // A word from the middle of the greedy text, where it first occurs.
  const words = text.split(' ').filter((w) => /^[a-z]{3,}$/.test(w));
  assert.ok(words.length > 2, `too few words in ${JSON.stringify(text)}`);
  const stop = ` ${words[Math.floor(words.length / 2)]}`;
  const cut = text.indexOf(stop);
  assert.ok(cut > 0);
  const stopped = await client.completions.create({ model: MODEL, prompt: storyPrompt, max_tokens: 48, temperature: 0, stop: [stop, 'never seen'] });
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.equal(stopped.choices[0].text, text.slice(0, cut));
  assert.ok(stopped.usage.completion_tokens < 48);

  const chunks = await collect(client.completions.create({ model: MODEL, prompt: storyPrompt, max_tokens: 48, temperature: 0, stop, stream: true }));
  assert.equal(chunks.map((c) => c.choices[0].text).join(''), text.slice(0, cut));
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
});

test('a seed repeats the same sampled text', async () => {
  const request = { model: MODEL, prompt: storyPrompt, max_tokens: 32, temperature: 0.9, top_p: 0.95, seed: 1234 };
  const a = await client.completions.create(request);
  const b = await client.completions.create(request);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('prompt as token ids gives the same text as the prompt string', async () => {
  const tokens = await post(`${server.url}/tokenize`, { content: storyPrompt, add_special: true });
  assert.equal(tokens.status, 200);
  const fromIds = await client.completions.create({ model: MODEL, prompt: tokens.json.tokens, max_tokens: 16, temperature: 0 });
  const fromText = await client.completions.create({ model: MODEL, prompt: storyPrompt, max_tokens: 16, temperature: 0 });
  assert.equal(fromIds.choices[0].text, fromText.choices[0].text);
  assert.equal(fromIds.usage.prompt_tokens, tokens.json.tokens.length);
});

test('chat logprobs: one entry per token, greedy picks the most likely', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: chatMessages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const entry of content) {
    assert.equal(typeof entry.token, 'string');
    assert.ok(entry.logprob <= 0);
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token)]);
    assert.equal(entry.top_logprobs.length, 3);
    assert.equal(entry.top_logprobs[0].token, entry.token);
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
    for (let i = 1; i < 3; i++) assert.ok(entry.top_logprobs[i].logprob <= entry.top_logprobs[i - 1].logprob);
  }
});

test('completions logprobs: tokens, token_logprobs, top_logprobs and text_offset line up', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: storyPrompt, max_tokens: 6, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 6);
  assert.equal(lp.token_logprobs.length, 6);
  assert.equal(lp.top_logprobs.length, 6);
  assert.equal(lp.text_offset.length, 6);
  assert.equal(lp.tokens.join(''), r.choices[0].text);
  for (let i = 1; i < 6; i++) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + Buffer.byteLength(lp.tokens[i - 1]));
});

test('the client reports API errors with their status', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: chatMessages, n: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'n',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'gpt-4o', messages: chatMessages }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
  );
});

// Structured outputs: response_format json_schema and json_object, llama.cpp's
// grammar field, and the 400 for a schema no value fits.
const catMessages = [{ role: 'user', content: 'Describe a cat.' }];
const catSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 6 },
    age: { type: 'integer', minimum: 0, maximum: 20 },
    color: { enum: ['black', 'white', 'orange'] },
  },
  required: ['name', 'age', 'color'],
  additionalProperties: false,
};

test('json_schema: every sampled answer parses and fits the schema', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: catMessages, max_tokens: 64, temperature: 1, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'cat', strict: true, schema: catSchema } },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    const cat = JSON.parse(r.choices[0].message.content);
    assert.deepEqual(Object.keys(cat), ['name', 'age', 'color']);
    assert.ok(typeof cat.name === 'string' && [...cat.name].length <= 6);
    assert.ok(Number.isInteger(cat.age) && cat.age >= 0 && cat.age <= 20);
    assert.ok(['black', 'white', 'orange'].includes(cat.color));
  }
});

test('json_object: the streamed answer is one JSON object', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL, messages: catMessages, max_tokens: 200, temperature: 1, seed: 4, stream: true,
    response_format: { type: 'json_object' },
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  if (finish === 'stop') assert.equal(typeof JSON.parse(text), 'object');
  else assert.match(text, /^\{/);
});

test('grammar: llama.cpp GBNF on /v1/completions', async () => {
  const r = await client.completions.create({
    model: MODEL, prompt: 'The answer is', max_tokens: 8, temperature: 1, seed: 5,
    grammar: 'root ::= ("yes" | "no") "!"?',
  });
  assert.match(r.choices[0].text, /^(yes|no)!?$/);
});

test('an impossible schema is a 400 naming the field', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: MODEL, messages: catMessages, max_tokens: 8,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', minItems: 3, maxItems: 1 } } },
    }),
    (e) => e.status === 400 && e.param === 'response_format.json_schema.schema' && /maxItems is below minItems/.test(e.message),
  );
});
