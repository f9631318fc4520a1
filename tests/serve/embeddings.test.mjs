// /v1/embeddings through the official openai client: float and base64
// shapes agree, vectors are unit length, an input's vector does not depend
// on the inputs beside it, and bad input is a clear 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { serverForTests } from './server.mjs';

const MODEL = 'stories260K';
const suite = serverForTests(['--parallel', '2']);

const texts = ['The cat sat on the mat.', 'Once upon a time there was a big tree.', 'The cat sat on the mat.'];

// The raw response, without the client's own base64 decoding.
async function raw(body) {
  const r = await fetch(`${suite.server.url}/v1/embeddings`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

function decodeBase64(s) {
  const bytes = Buffer.from(s, 'base64');
  const out = [];
  for (let i = 0; i < bytes.length; i += 4) out.push(bytes.readFloatLE(i));
  return out;
}

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

test('embeddings: floats, unit length, usage, identical texts have cosine 1', async () => {
  const r = await suite.client.embeddings.create({ model: MODEL, input: texts, encoding_format: 'float' });
  assert.equal(r.object, 'list');
  assert.equal(r.model, MODEL);
  assert.equal(r.data.length, 3);
  assert.deepEqual(r.data.map((d) => d.index), [0, 1, 2]);
  for (const d of r.data) {
    assert.equal(d.object, 'embedding');
    assert.ok(d.embedding.length > 0);
    assert.ok(Math.abs(dot(d.embedding, d.embedding) - 1) < 1e-5);
  }
  assert.deepEqual(r.data[0].embedding, r.data[2].embedding);
  assert.ok(dot(r.data[0].embedding, r.data[1].embedding) < 0.999);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
});

test('embeddings: base64 (little-endian f32) decodes to the float vectors, bit for bit', async () => {
  const floats = await raw({ input: texts, encoding_format: 'float' });
  const packed = await raw({ input: texts, encoding_format: 'base64' });
  assert.equal(floats.status, 200);
  assert.equal(packed.status, 200);
  for (let i = 0; i < texts.length; i++) {
    assert.equal(typeof packed.body.data[i].embedding, 'string');
    const decoded = decodeBase64(packed.body.data[i].embedding);
    const expected = floats.body.data[i].embedding.map((x) => Math.fround(x));
    assert.deepEqual(decoded, expected);
  }
  // The client asks for base64 by default and decodes it itself.
  const viaClient = await suite.client.embeddings.create({ model: MODEL, input: texts[1] });
  assert.deepEqual(viaClient.data[0].embedding, decodeBase64(packed.body.data[1].embedding));
});

test('embeddings: an input alone equals the same input in a batch; token arrays equal their text', async () => {
  const batch = await raw({ input: texts, encoding_format: 'base64' });
  const alone = await raw({ input: texts[1], encoding_format: 'base64' });
  assert.equal(alone.body.data[0].embedding, batch.body.data[1].embedding);
  const ids = (await (await fetch(`${suite.server.url}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content: texts[1], add_special: true, parse_special: false }),
  })).json()).tokens;
  const fromIds = await raw({ input: [ids, ids], encoding_format: 'base64' });
  assert.equal(fromIds.body.data[0].embedding, alone.body.data[0].embedding);
  assert.equal(fromIds.body.data[1].embedding, alone.body.data[0].embedding);
});

test('embeddings: bad input is a clear 400', async () => {
  for (const [body, param] of [
    [{}, 'input'],
    [{ input: '' }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: ['a', 5] }, 'input[1]'],
    [{ input: [[1, 99999999]] }, 'input[0]'],
    [{ input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    [{ input: 'a', dimensions: 3 }, 'dimensions'],
  ]) {
    const r = await raw(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.param, param, JSON.stringify(body));
  }
  assert.equal((await raw({ input: 'a', model: 'other' })).status, 404);
});
