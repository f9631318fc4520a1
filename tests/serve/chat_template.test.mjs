// Chat through a model's own Jinja chat template: a synthetic model made by
// lamina-synth-model (the "tiny" preset carries a ChatML-style template).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, post } from './server.mjs';

const synth = process.env.LAMINA_SYNTH_EXE;
let server;

before(async () => {
  if (!synth) return;
  const model = `${process.cwd()}/tiny-chat.gguf`;
  const made = spawnSync(synth, ['tiny', model, '--type', 'F32', '--threads', '1'], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  server = await startServer(['--model', model]);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

test('chat messages are rendered with the model template', { skip: !synth && 'lamina-synth-model is not built' }, async () => {
  assert.match(server.log(), /chat format the model's Jinja template/);
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi there' },
    { role: 'assistant', content: 'Hello!' },
    { role: 'user', content: 'Tell me more.' },
  ];
  const rendered = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
  const ids = (await post(`${server.url}/tokenize`, { content: rendered })).json.tokens;
  const chat = await post(`${server.url}/v1/chat/completions`, { messages, max_tokens: 12, temperature: 0 });
  assert.equal(chat.status, 200, JSON.stringify(chat.json));
  assert.equal(chat.json.usage.prompt_tokens, ids.length);
  // The same prompt ids through /v1/completions continue identically.
  const text = await post(`${server.url}/v1/completions`, { prompt: ids, max_tokens: 12, temperature: 0 });
  assert.equal(chat.json.choices[0].message.content, text.json.choices[0].text);
  assert.equal(chat.json.usage.completion_tokens, text.json.usage.completion_tokens);
});
