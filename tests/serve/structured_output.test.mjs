// Structured outputs through the official openai client: response_format
// json_schema and json_object, llama.cpp's grammar field, and the 400 for a
// schema no value fits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';

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

const messages = [{ role: 'user', content: 'Describe a cat.' }];
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
      model: MODEL, messages, max_tokens: 64, temperature: 1, seed,
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
    model: MODEL, messages, max_tokens: 200, temperature: 1, seed: 4, stream: true,
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
      model: MODEL, messages, max_tokens: 8,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', minItems: 3, maxItems: 1 } } },
    }),
    (e) => e.status === 400 && e.param === 'response_format.json_schema.schema' && /maxItems is below minItems/.test(e.message),
  );
});
