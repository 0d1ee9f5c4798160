// The model-call path of one agent step, taken apart (issue 17 item 2): what one step costs in
// CPU when it goes through the AI SDK's `streamText` (a multi-step call as svc makes it, divided
// by its steps: prompt conversion, tool preparation, its stream pipeline, running the tool's
// `execute`, the provider), through the provider's `doStream` alone (the
// prompt already converted, the tools already prepared: what svc would pay driving the model
// itself), and through a bare `fetch` of the same request body with the reply read as text (the
// floor of Node's HTTP client). Same fake OpenAI-compatible server (a child process, so its CPU
// is not counted) answering every request with one tool call, 142 tools of ~850 bytes of schema
// each, a history of BENCH_HISTORY messages. CPU per call is this process's user+system time
// (all threads) divided by the calls. Not svc's own code: svc's share is in agent-loop.bench.mjs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = 50;
const HISTORY = Number(process.env.BENCH_HISTORY ?? 100);
const TOOLS = 142;

const SERVER = `
const { createServer } = require('node:http');
const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
const chunk = (delta, finish = null, extra = {}) => 'data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra }) + '\\n\\n';
let n = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    n++;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_' + n, type: 'function', function: { name: 'tool_0', arguments: '{}' } }] }));
    res.write(chunk({}, 'tool_calls', { usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } }));
    res.end('data: [DONE]\\n\\n');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

function schemaOf(i) {
  const properties = {};
  for (let p = 0; p < 6; p++)
    properties[`field_${p}`] = {
      type: 'string',
      description: `Field ${p} of tool ${i}: ${'what it means and how it is used. '.repeat(3)}`,
    };
  return { type: 'object', properties, required: ['field_0'], additionalProperties: false };
}

async function cpuPerCall(fn, stepsPerCall = 1) {
  const calls = Math.ceil(CALLS / stepsPerCall);
  for (let i = 0; i < Math.ceil(WARMUP / stepsPerCall); i++) await fn(i);
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) await fn(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / (calls * stepsPerCall);
}
/** Steps of one streamText call (svc drives a whole run with one call). */
const STEPS_PER_CALL = 25;

export async function run() {
  const child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(child.stdout, 'data');
  const url = `http://127.0.0.1:${String(line).trim()}/v1`;
  try {
    const ai = await import('ai');
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const model = createOpenAICompatible({ name: 'fake', baseURL: url, includeUsage: true })('m1');
    const tools = {};
    for (let i = 0; i < TOOLS; i++)
      tools[`tool_${i}`] = ai.tool({
        description: `Tool ${i}. ${'It does one thing well. '.repeat(8)}`,
        inputSchema: ai.jsonSchema(schemaOf(i)),
        execute: async () => 'phase: build',
      });
    const messages = [{ role: 'user', content: 'Do the task.' }];
    // The streamText call adds two messages a step: the other paths get its middle size.
    for (let i = 0; messages.length < HISTORY; i++) {
      messages.push({
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: `h${i}`, toolName: 'tool_0', input: {} }],
      });
      messages.push({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `h${i}`,
            toolName: 'tool_0',
            output: { type: 'text', value: `result ${i}: phase build` },
          },
        ],
      });
    }
    const system = 'You are a coding agent. '.repeat(200);

    const viaStreamText = async () => {
      const result = ai.streamText({
        model,
        system,
        messages,
        tools,
        stopWhen: ai.stepCountIs(STEPS_PER_CALL),
        maxRetries: 0,
      });
      for await (const _ of result.fullStream);
    };

    // The same request, prepared once: the prompt in the provider's terms and the tool list.
    const prompt = [
      { role: 'system', content: system },
      ...messages.map((m) =>
        m.role === 'user'
          ? { role: 'user', content: [{ type: 'text', text: m.content }] }
          : m.role === 'assistant'
            ? { role: 'assistant', content: m.content.map((p) => ({ ...p })) }
            : { role: 'tool', content: m.content },
      ),
    ];
    const prepared = Object.entries(tools).map(([name, t]) => ({
      type: 'function',
      name,
      description: t.description,
      inputSchema: t.inputSchema.jsonSchema,
    }));
    const viaDoStream = async () => {
      const { stream } = await model.doStream({ prompt, tools: prepared });
      const reader = stream.getReader();
      while (!(await reader.read()).done);
    };

    const body = JSON.stringify({ model: 'm1', messages: prompt, tools: prepared, stream: true });
    const viaFetch = async () => {
      const response = await fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await response.text();
    };

    const rows = [];
    for (const [name, fn, steps] of [
      ['streamText, CPU per step (ms)', viaStreamText, STEPS_PER_CALL],
      ['provider doStream, prepared request (ms)', viaDoStream, 1],
      ['fetch of the same body, reply as text (ms)', viaFetch, 1],
    ]) {
      rows.push({ name, value: (await cpuPerCall(fn, steps)).toFixed(3) });
    }
    rows.push({ name: 'request body (KB)', value: (Buffer.byteLength(body) / 1024).toFixed(0) });
    return rows;
  } finally {
    child.kill();
  }
}
