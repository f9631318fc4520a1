// Tool calling through the official openai client, on the tiny Qwen2-style test
// model (../shared/testdata/hf/qwen2) given Qwen3's real chat template (from its
// tokenizer package), which teaches Hermes <tool_call> blocks. A random tiny
// model does not choose to call tools, so the round trip feeds back a call as a
// client would after one (the parsing of calls out of output is tested in C++,
// tests/model/tool_calls_test.cc and tests/serve/tool_calls_test.cc); here the
// request and response shapes are checked, and that tools, the assistant's calls
// and the tool result reach the prompt exactly as the template renders them: the
// prompt's token count equals that of the rendering written out by hand below.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { readChatStream, startServer, tokenCount as countTokens } from './server.mjs';
import { hermesToolsHeader, modelWithTemplate, qwen3Template } from './tool_templates.mjs';

const testdata = process.env.LAMINA_TESTDATA_DIR;
const qwen2 = testdata && path.join(testdata, 'hf', 'qwen2');
const missing = !qwen2 || !fs.existsSync(path.join(qwen2, 'model.safetensors')) ? `no test model at ${qwen2}` : false;
let server, client, folder;

// Keys in sorted order, as the C++ tests' transformers renderings have them.
const tools = [
  {
    function: {
      description: 'Current weather in a city',
      name: 'get_weather',
      parameters: { properties: { city: { type: 'string' } }, required: ['city'], type: 'object' },
    },
    type: 'function',
  },
];

// Qwen3's system turn with tools.
const toolsHeader = hermesToolsHeader(tools);

const tokenCount = (text) => countTokens(server.url, text);

before(async () => {
  if (missing) return;
  folder = modelWithTemplate(qwen2, qwen3Template());
  server = await startServer(['--model', folder]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
  if (folder) fs.rmSync(folder, { recursive: true, force: true });
});

test('a tool-call round trip renders tools, calls and results through the template', { skip: missing }, async () => {
  assert.match(server.log(), /tool calls hermes/);
  const user = { role: 'user', content: 'Weather in Paris?' };
  // 1. The request offers the tools.
  const first = await client.chat.completions.create({ messages: [user], tools, max_tokens: 8, temperature: 0 });
  const choice = first.choices[0];
  assert.ok(['stop', 'length', 'tool_calls'].includes(choice.finish_reason));
  assert.equal(choice.message.role, 'assistant');
  for (const call of choice.message.tool_calls ?? []) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
  }
  const asked = `${toolsHeader}<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n`;
  assert.equal(first.usage.prompt_tokens, await tokenCount(asked));

  // 2. The client runs the call and sends the result back, echoing the call as
  // OpenAI returns it (content null, arguments as JSON text).
  const call = { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
  const messages = [
    user,
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: 'call_abc', content: '18 C and sunny' },
  ];
  const final = await client.chat.completions.create({ messages, tools, max_tokens: 8, temperature: 0 });
  assert.equal(final.choices[0].message.role, 'assistant');
  const rendered =
    asked +
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
    '<|im_start|>user\n<tool_response>\n18 C and sunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n';
  assert.equal(final.usage.prompt_tokens, await tokenCount(rendered));
});

test('streamed replies with tools carry the same message as whole ones', { skip: missing }, async () => {
  const request = { messages: [{ role: 'user', content: 'Tell me a story.' }], tools, max_tokens: 24, temperature: 0 };
  const whole = await client.chat.completions.create(request);
  const { content, calls, finish } = await readChatStream(await client.chat.completions.create({ ...request, stream: true }));
  const message = whole.choices[0].message;
  assert.equal(content, message.content ?? '');
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(calls.map((c) => c.function), (message.tool_calls ?? []).map((c) => c.function));
});

test('tool_choice none hides the tools', { skip: missing }, async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  const none = await client.chat.completions.create({ messages, tools, tool_choice: 'none', max_tokens: 2 });
  assert.equal(none.usage.prompt_tokens, await tokenCount('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'));
  await assert.rejects(
    client.chat.completions.create({ messages, tools, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    (e) => e.status === 400 && e.param === 'tool_choice',
  );
});

// Keys deliberately unsorted: the template must see them in this order.
const boundedTools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 8 }, unit: { enum: ['c', 'f'] } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { b: { type: 'integer', minimum: 0, maximum: 9 }, a: { type: 'integer', minimum: 0, maximum: 9 } },
        required: ['b', 'a'],
        additionalProperties: false,
      },
    },
  },
];

test('tool_choice required and a named function force valid calls (temperature 1)', { skip: missing }, async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  const header = hermesToolsHeader(boundedTools);
  const prompt = `${header}<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n`;
  const cases = [
    { tool_choice: 'required', names: ['get_weather', 'add'] },
    { tool_choice: 'required', parallel_tool_calls: false, names: ['get_weather', 'add'] },
    { tool_choice: { type: 'function', function: { name: 'add' } }, names: ['add'] },
  ];
  let finished = 0;
  for (const { names, ...choice } of cases) {
    for (let seed = 1; seed <= 4; seed++) {
      const request = { messages, tools: boundedTools, ...choice, max_tokens: 120, temperature: 1, seed };
      const r = await client.chat.completions.create(request);
      assert.equal(r.usage.prompt_tokens, await tokenCount(prompt));  // the client's key order reached the template
      const c = r.choices[0];
      if (c.finish_reason === 'length') continue;
      finished++;
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.ok(c.message.tool_calls.length >= 1);
      if (choice.parallel_tool_calls === false) assert.equal(c.message.tool_calls.length, 1);
      for (const call of c.message.tool_calls) {
        assert.ok(names.includes(call.function.name), call.function.name);
        const args = JSON.parse(call.function.arguments);
        if (call.function.name === 'add') {
          assert.deepEqual(Object.keys(args), ['b', 'a']);
          for (const k of ['a', 'b']) assert.ok(Number.isInteger(args[k]) && args[k] >= 0 && args[k] <= 9);
        } else {
          assert.ok(typeof args.city === 'string' && [...args.city].length <= 8);
          assert.ok(Object.keys(args).every((k) => k === 'city' || k === 'unit'));
        }
      }
      // Streamed, the same request's deltas reassemble to the same calls.
      const { calls } = await readChatStream(await client.chat.completions.create({ ...request, stream: true }));
      assert.deepEqual(calls.map((x) => x.function), c.message.tool_calls.map((x) => x.function));
    }
  }
  assert.ok(finished >= 6, `${finished} of 12 samples finished`);
  // With a response format too, the two constraints conflict.
  await assert.rejects(
    client.chat.completions.create({ messages, tools: boundedTools, tool_choice: 'required', response_format: { type: 'json_object' } }),
    (e) => e.status === 400 && e.param === 'tool_choice',
  );
});

test('tools for a model whose template teaches no call format are refused', async () => {
  const plain = await startServer([]);  // the bundled model: no tool format in its template
  try {
    const c = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: 'none', maxRetries: 0 });
    await assert.rejects(c.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], tools }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, 'tools');
      assert.match(e.message, /tool-call format/);
      return true;
    });
  } finally {
    assert.equal((await plain.stop()).code, 0, plain.log());
  }
});
