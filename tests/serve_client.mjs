// serve_client.mjs — clients of `edge0-infer serve` for tests/test_serve.c, run with node:
//   node serve_client.mjs load URL     16 concurrent streaming clients, 64 requests, every 8th
//                                      disconnecting mid-stream; each completed stream is checked
//                                      against the same greedy request made alone (its ids)
//   node serve_client.mjs openai URL NODE_PATH_DIR   the official `openai` package (installed
//                                      there by the test): chat and completions, streamed and not,
//                                      usage, stop strings, error statuses, tools
//   node serve_client.mjs replay SSE_FILE NODE_PATH_DIR   the `openai` package's streaming helper
//                                      (beta.chat.completions.stream) reading a tool-call stream
//                                      that serve's formatter wrote (test_serve_api), served by a
//                                      local HTTP server: its final message must equal the whole
//                                      response in SSE_FILE.json
// Prints one line per check ("ok NAME" / "FAIL NAME: why") and exits 1 when any failed.
let failed = 0;
function check(name, cond, why) {
  if (cond) console.log(`ok ${name}`);
  else { failed++; console.log(`FAIL ${name}: ${why}`); }
}

const [mode, url, dir] = process.argv.slice(2);
const prompts = ['Once upon a time', 'The quick brown fox', 'In a hole in the ground', 'It was a bright cold day'];
const body = (p, extra) => JSON.stringify({ prompt: p, max_tokens: 24, temperature: 0, ignore_eos: true, return_tokens: true, ...extra });

async function post(path, b, signal) {
  return fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: b, signal });
}

// A streamed completion: its ids and text, or null when aborted.
async function streamed(p, abortAfter) {
  const ac = new AbortController();
  const r = await post('/v1/completions', body(p, { stream: true }), ac.signal);
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '', ids = [], text = '', done = false, chunks = 0;
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buf += dec.decode(value, { stream: true });
      let k;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const line = buf.slice(0, k); buf = buf.slice(k + 2);
        if (!line.startsWith('data: ')) continue;
        const d = line.slice(6);
        if (d === '[DONE]') { done = true; continue; }
        const j = JSON.parse(d);
        if (j.error) throw new Error('stream error: ' + j.error.message);
        for (const c of j.choices) { ids.push(...(c.tokens || [])); text += c.text; }
        if (abortAfter && ++chunks >= abortAfter) { ac.abort(); return null; }
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') return null;
    throw e;
  }
  return { ids, text, done };
}

async function load() {
  const ref = {};
  for (const p of prompts) {
    const j = await (await post('/v1/completions', body(p))).json();
    ref[p] = { ids: j.choices[0].tokens, text: j.choices[0].text };
  }
  let next = 0, completed = 0, aborted = 0, bad = [];
  async function client() {
    while (next < 64) {
      const i = next++;
      const p = prompts[i % prompts.length];
      // every 8th goes away after its first event: under load the server sends several tokens per
      // event, so a later cut could fall after the whole reply
      const res = await streamed(p, i % 8 === 7 ? 1 : 0);
      if (!res) { aborted++; continue; }
      completed++;
      if (!res.done || JSON.stringify(res.ids) !== JSON.stringify(ref[p].ids) || res.text !== ref[p].text)
        bad.push(`request ${i}: done=${res.done} ids ${res.ids.length} text ${JSON.stringify(res.text).slice(0, 60)}`);
    }
  }
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 16 }, client));
  check('load_all_answered', completed + aborted === 64, `${completed} completed + ${aborted} aborted`);
  check('load_aborted', aborted === 8, `${aborted} aborted`);
  check('load_streams_equal_alone', bad.length === 0, bad.slice(0, 3).join('; '));
  console.log(`# load: 64 requests in ${(Date.now() - t0) / 1000} s`);
}

async function openai() {
  const { default: OpenAI } = await import(dir + '/node_modules/openai/index.mjs');
  const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 });
  const chat = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0 });
  check('openai_chat', chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant' &&
    typeof chat.choices[0].message.content === 'string' && chat.usage.completion_tokens > 0 &&
    chat.usage.prompt_tokens > 0, JSON.stringify(chat).slice(0, 200));
  const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8,
    temperature: 0, stream: true, stream_options: { include_usage: true } });
  let text = '', usage = null, finish = null;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) { text += ch.delta.content || ''; if (ch.finish_reason) finish = ch.finish_reason; }
  }
  check('openai_chat_stream', text === chat.choices[0].message.content && usage && usage.completion_tokens === chat.usage.completion_tokens &&
    finish === chat.choices[0].finish_reason, `${JSON.stringify(text)} vs ${JSON.stringify(chat.choices[0].message.content)}, usage ${JSON.stringify(usage)}`);
  const comp = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 12, temperature: 0 });
  const full = comp.choices[0].text;
  check('openai_completion', comp.object === 'text_completion' && full.length > 0, JSON.stringify(comp).slice(0, 200));
  // a stop string from the middle of the text: the reply ends right before it
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  const cut = full.slice(0, full.indexOf(stop));
  const st = await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, stop: [stop] });
  check('openai_stop', st.choices[0].text === cut && st.choices[0].finish_reason === 'stop', `${JSON.stringify(st.choices[0].text)} vs ${JSON.stringify(cut)} (stop ${JSON.stringify(stop)})`);
  let s2 = '';
  for await (const c of await client.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, stop, stream: true }))
    s2 += c.choices.map((x) => x.text).join('');
  check('openai_stop_stream', s2 === cut, `${JSON.stringify(s2)} vs ${JSON.stringify(cut)}`);
  for (const [name, f, status] of [
    ['openai_error_400', () => client.chat.completions.create({ model: 'm', messages: [], max_tokens: 4 }), 400],
    ['openai_error_400_type', () => client.completions.create({ model: 'm', prompt: 'x', temperature: 'hot' }), 400],
    ['openai_error_404', () => client.get('/nothing-here'), 404],
  ]) {
    let got = null;
    try { await f(); } catch (e) { got = e; }
    check(name, got && got.status === status && got.error && typeof got.error.message === 'string', got ? `${got.status} ${got.message}` : 'no error');
  }
  // tools as the package sends them, and a conversation with a tool call and its result
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const withTools = await client.chat.completions.create({ model: 'm', max_tokens: 4, temperature: 0, tools, tool_choice: 'auto',
    messages: [{ role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' }] });
  // the same streamed through the package's stream helper: the same content (no tool-call
  // markup held back for good), finish reason and usage
  const toolStream = client.beta.chat.completions.stream({ model: 'm', max_tokens: 4, temperature: 0, tools, tool_choice: 'auto',
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' }] });
  const tsFinal = await toolStream.finalChatCompletion();
  check('openai_tools_stream', (tsFinal.choices[0].message.content || '') === withTools.choices[0].message.content &&
    tsFinal.choices[0].finish_reason === withTools.choices[0].finish_reason && !tsFinal.choices[0].message.tool_calls &&
    tsFinal.usage && tsFinal.usage.completion_tokens === withTools.usage.completion_tokens,
    `${JSON.stringify(tsFinal.choices[0])} vs ${JSON.stringify(withTools.choices[0])}`);
  check('openai_tools', withTools.object === 'chat.completion' && withTools.usage.prompt_tokens > chat.usage.prompt_tokens + 50 &&
    typeof withTools.choices[0].message.content === 'string', JSON.stringify(withTools).slice(0, 300));
  // structured output as the package sends it: response_format json_schema; the content parses
  // and has the schema's required keys with their types (or the reply was cut by max_tokens)
  const schema = { type: 'object', properties: { city: { type: 'string', maxLength: 8 }, sunny: { type: 'boolean' } },
    required: ['city', 'sunny'], additionalProperties: false };
  let parsed = 0, cutShort = 0;
  for (let seed = 1; seed <= 3; seed++) {
    const r = await client.chat.completions.create({ model: 'm', max_tokens: 120, temperature: 1, seed,
      messages: [{ role: 'user', content: 'Weather?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema } } });
    if (r.choices[0].finish_reason === 'length') { cutShort++; continue; }
    const v = JSON.parse(r.choices[0].message.content);
    if (typeof v.city === 'string' && typeof v.sunny === 'boolean' && Object.keys(v).length === 2) parsed++;
  }
  check('openai_json_schema', parsed + cutShort === 3 && parsed >= 1, `${parsed} parsed, ${cutShort} cut`);
  const models = await client.models.list();
  check('openai_models', models.data.length === 1 && typeof models.data[0].id === 'string', JSON.stringify(models));
}

// serve's SSE for a reply with content and two tool calls, read by the package's stream helper
async function replay() {
  const fs = await import('node:fs');
  const http = await import('node:http');
  const sse = fs.readFileSync(url, 'utf8');
  const whole = JSON.parse(fs.readFileSync(url + '.json', 'utf8'));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(200, { 'Content-Type': 'text/event-stream' }); res.end(sse); });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { default: OpenAI } = await import(dir + '/node_modules/openai/index.mjs');
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'none', maxRetries: 0 });
  const tools = whole.choices[0].message.tool_calls.map((c) => ({ type: 'function', function: { name: c.function.name, parameters: { type: 'object' } } }));
  const stream = client.beta.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools, stream: true });
  const done = [];
  let deltas = '';
  stream.on('content.delta', (e) => { deltas += e.delta; });
  stream.on('tool_calls.function.arguments.done', (e) => done.push(e));
  const fin = await stream.finalChatCompletion();
  server.close();
  const m = fin.choices[0].message, w = whole.choices[0].message;
  const calls = (m.tool_calls || []).map(({ id, type, function: f }) => ({ id, type, function: { name: f.name, arguments: f.arguments } }));
  check('replay_tool_calls', JSON.stringify(calls) === JSON.stringify(w.tool_calls), `${JSON.stringify(m.tool_calls)} vs ${JSON.stringify(w.tool_calls)}`);
  check('replay_content', m.content === w.content && deltas === w.content && !deltas.includes('<tool'), `${JSON.stringify(m.content)} / ${JSON.stringify(deltas)} vs ${JSON.stringify(w.content)}`);
  check('replay_finish', fin.choices[0].finish_reason === 'tool_calls', fin.choices[0].finish_reason);
  check('replay_arguments_done', done.length === w.tool_calls.length && done.every((e, i) => e.name === w.tool_calls[i].function.name &&
    e.arguments === w.tool_calls[i].function.arguments), JSON.stringify(done));
}

try {
  if (mode === 'load') await load();
  else if (mode === 'replay') await replay();
  else if (mode === 'openai') await openai();
  else throw new Error('mode: load | openai | replay');
} catch (e) {
  failed++;
  console.log(`FAIL ${mode}: ${e.stack || e}`);
}
process.exit(failed ? 1 : 0);
