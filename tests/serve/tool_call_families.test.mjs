// A tool-call round trip for each call format the server parses, through the
// official openai client: the model is made to call a tool (tool_choice
// "required", which constrained decoding enforces, so a tiny random model
// writes a well-formed call), the client sends the call back with the tool's
// result, and the model answers (tool_choice "none"). Each family uses a
// released model's real chat template on a tiny test model of
// ../shared/testdata/hf: Qwen 3's (Hermes <tool_call>, from its tokenizer
// package), Llama 3.3's (JSON calls), Mistral Small 3.1's ([TOOL_CALLS]) and
// gpt-oss's (harmony), the last three verbatim from the C++ tests' copies. The
// prompts' token counts equal those of the renderings written out by hand
// below (tests/model/chat_template_tools_test.cc checks the same renderings
// against transformers'), so the tools, the model's own call and the result
// reach the prompt; streamed replies reassemble to the whole ones.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { readChatStream, startServer, tokenCount } from './server.mjs';
import { hermesToolsHeader, modelWithTemplate, pyDumps, qwen3Template, templateFromHeader } from './tool_templates.mjs';

const testdata = process.env.LAMINA_TESTDATA_DIR;
const hf = (name) => testdata && path.join(testdata, 'hf', name);

// Client key order, as the templates must see it.
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', pattern: '^[A-Za-z]{1,8}$' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
];

const user = { role: 'user', content: 'Weather in Paris?' };
const result = '18 C and sunny';
const localDate = () => {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

// Each family: its model and template, the start-up line's format name, and
// the hand renderings of the call turn (`asked`: tools offered) and of the
// answer turn (`answered`: no tools, the call `call` and its result).
const families = [
  {
    name: 'hermes',
    title: 'Qwen 3 (Hermes <tool_call>)',
    model: 'qwen2',
    template: qwen3Template,
    system: null,
    asked: () => `${hermesToolsHeader(tools)}<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n`,
    answered: (call) =>
      '<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n' +
      `<tool_call>\n{"name": "${call.name}", "arguments": ${pyDumps(call.arguments)}}\n</tool_call><|im_end|>\n` +
      `<|im_start|>user\n<tool_response>\n${result}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
  },
  {
    name: 'llama3-json',
    title: 'Llama 3.3 (JSON calls)',
    model: 'llama',
    template: () => templateFromHeader('chat_template_real_templates.h', 'kLlama33'),
    system: null,
    asked: () =>
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n' +
      'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a ' +
      'function call with its proper arguments that best answers the given prompt.\n\n' +
      'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' +
      'Do not use variables.\n\n' +
      tools.map((t) => `${pyDumps(t, 4)}\n\n`).join('') +
      'Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    answered: (call) =>
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n' +
      'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>' +
      `<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "${call.name}", "parameters": ${pyDumps(call.arguments)}}<|eot_id|>` +
      // A string "is iterable" in Jinja: the result goes through tojson, quoted.
      `<|start_header_id|>ipython<|end_header_id|>\n\n${JSON.stringify(result)}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`,
  },
  {
    name: 'mistral',
    title: 'Mistral Small 3.1 ([TOOL_CALLS])',
    model: 'mistral',
    template: () => templateFromHeader('chat_template_tool_templates.h', 'kMistralSmall31'),
    // Given, so that strftime_now's date does not show.
    system: 'Be brief.',
    asked: () =>
      '<s>[SYSTEM_PROMPT]You are a helpful assistant that can call tools. If you call one or more tools, format them ' +
      'in a single JSON array or objects, where each object is a tool call, not as separate objects outside of an ' +
      'array or multiple arrays. Use the format [{"name": tool call name, "arguments": tool call arguments}, ' +
      'additional tool calls] if you call more than one tool. If you call tools, do not attempt to interpret them ' +
      'or otherwise provide a response until you receive a tool call result that you can interpret for the user.' +
      'Be brief.[/SYSTEM_PROMPT][AVAILABLE_TOOLS] [' +
      tools
        .map((t) => {
          const f = t.function;
          return `{"type": "function", "function": {"name": "${f.name}", "description": "${f.description}", "parameters": ${pyDumps(f.parameters)}}}`;
        })
        .join(', ') +
      '][/AVAILABLE_TOOLS][INST]Weather in Paris?[/INST]',
    answered: (call) =>
      '<s>[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Weather in Paris?[/INST]' +
      `[TOOL_CALLS] [{"name": "${call.name}", "arguments": ${pyDumps(call.arguments)}, "id": "${call.id.slice(-9)}"}]</s>` +
      `[TOOL_RESULTS] {"content": ${result}, "call_id": "${call.id.slice(-9)}"}[/TOOL_RESULTS]`,
  },
  {
    name: 'harmony',
    title: 'gpt-oss (harmony)',
    model: 'qwen2',
    template: () => templateFromHeader('chat_template_tool_templates.h', 'kGptOss'),
    system: null,
    asked: () =>
      harmonySystem(true) +
      '<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n' +
      '// Current weather in a city\ntype get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions<|end|>' +
      '<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant',
    answered: (call) =>
      harmonySystem(false) +
      '<|start|>user<|message|>Weather in Paris?<|end|>' +
      `<|start|>assistant to=functions.${call.name}<|channel|>commentary json<|message|>${pyDumps(call.arguments)}<|call|>` +
      `<|start|>functions.${call.name} to=assistant<|channel|>commentary<|message|>${JSON.stringify(result)}<|end|>` +
      '<|start|>assistant',
  },
];

function harmonySystem(withTools) {
  return (
    '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n' +
    `Knowledge cutoff: 2024-06\nCurrent date: ${localDate()}\n\nReasoning: medium\n\n` +
    '# Valid channels: analysis, commentary, final. Channel must be included for every message.' +
    (withTools ? "\nCalls to these tools must go to the commentary channel: 'functions'." : '') +
    '<|end|>'
  );
}

const missing = families.map((f) => hf(f.model)).find((dir) => !dir || !fs.existsSync(path.join(dir, 'config.json')));
const skip = !process.env.LAMINA_TESTS_SOURCE_DIR
  ? 'LAMINA_TESTS_SOURCE_DIR is not set'
  : missing !== undefined && `no test model at ${missing}`;
const servers = new Map();
const folders = [];

before(async () => {
  if (skip) return;
  await Promise.all(
    families.map(async (family) => {
      const folder = modelWithTemplate(hf(family.model), family.template());
      folders.push(folder);
      const server = await startServer(['--model', folder]);
      servers.set(family.name, { server, client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 }) });
    }),
  );
});

after(async () => {
  for (const { server } of servers.values()) assert.equal((await server.stop()).code, 0, server.log());
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
});

for (const family of families) {
  test(`tool-call round trip: ${family.title}`, { skip }, async () => {
    const { server, client } = servers.get(family.name);
    assert.match(server.log(), new RegExp(`tool calls ${family.name}\\b`));
    const head = family.system ? [{ role: 'system', content: family.system }] : [];

    // 1. The call: forced, greedy, whole and streamed.
    const request = { messages: [...head, user], tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 96, temperature: 0 };
    const first = await client.chat.completions.create(request);
    assert.equal(first.usage.prompt_tokens, await tokenCount(server.url, family.asked()));
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.content ?? '', '');
    assert.equal(choice.message.tool_calls.length, 1);
    const [call] = choice.message.tool_calls;
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual(Object.keys(args), ['city']);
    assert.match(args.city, /^[A-Za-z]{1,8}$/);
    if (family.name === 'mistral') assert.match(call.id, /^[A-Za-z0-9]{9}$/);
    else assert.match(call.id, /^call_/);

    const streamed = await readChatStream(await client.chat.completions.create({ ...request, stream: true }));
    assert.equal(streamed.finish, 'tool_calls');
    assert.equal(streamed.content, choice.message.content ?? '');
    assert.deepEqual(streamed.calls.map((c) => c.function), [call.function]);
    assert.equal(streamed.calls[0].type, 'function');

    // 2. The client runs the call and sends the result back, echoing the call
    // as it came (content null, arguments as JSON text); the answer offers no tools.
    const messages = [
      ...head,
      user,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: result },
    ];
    const answerRequest = { messages, tools, tool_choice: 'none', max_tokens: 8, temperature: 0 };
    const final = await client.chat.completions.create(answerRequest);
    const rendered = family.answered({ id: call.id, name: call.function.name, arguments: args });
    assert.equal(final.usage.prompt_tokens, await tokenCount(server.url, rendered));
    const answer = final.choices[0];
    assert.equal(answer.message.role, 'assistant');
    assert.ok(['stop', 'length'].includes(answer.finish_reason), answer.finish_reason);
    assert.deepEqual(answer.message.tool_calls ?? [], []);
    const streamedAnswer = await readChatStream(await client.chat.completions.create({ ...answerRequest, stream: true }));
    assert.equal(streamedAnswer.content, answer.message.content ?? '');
    assert.equal(streamedAnswer.finish, answer.finish_reason);
    assert.deepEqual(streamedAnswer.calls, []);
  });
}
