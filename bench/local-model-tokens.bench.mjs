// Input tokens a local model with no known context window receives for a small task (issue #16):
// `svc run` (the built binary) against a fake OpenAI-compatible server that tells no window (it
// answers only /v1/chat/completions), scripted for the three-step hello.txt task: view hello.txt,
// write it, say done. Tokens are estimated as the characters of each request body / 4 (the usual
// rough ratio; the requests carry the system prompt, the history and the tool schemas).
// "before": options.tool_exposure = "all" (what every such model got before the window was
// learned and `auto` deferred on an unknown window); "after": as shipped (`auto`).
// Target (issue #16): under 20,000 input tokens in total for the whole task.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startChatServer } from './fake-chat.mjs';

const BIN = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');

const STEPS = [
  { name: 'view', arguments: { path: 'hello.txt' } },
  { name: 'write', arguments: { path: 'hello.txt', content: 'hello, world\n' } },
  { text: 'hello.txt now says hello, world.' },
];

async function startServer() {
  const bodies = [];
  const server = await startChatServer({
    model: 'm1',
    answer(body) {
      bodies.push(body);
      const step = STEPS[Math.min(bodies.length, STEPS.length) - 1];
      const usage = { prompt_tokens: Math.ceil(body.length / 4), completion_tokens: 10 };
      if (step.text) return { text: step.text, usage };
      return { call: { id: `call_${bodies.length}`, name: step.name, args: step.arguments }, usage };
    },
  });
  return { server, bodies };
}

async function runOnce(exposure) {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-tokens-'));
  const { server, bodies } = await startServer();
  try {
    const options = exposure ? `[options]\ntool_exposure = "${exposure}"\n` : '';
    writeFileSync(
      join(ws, 'svc.toml'),
      `[providers.local]\ntype = "openai-compat"\nbase_url = "http://127.0.0.1:${server.address().port}/v1"\n[models]\nlarge = "local/m1"\n${options}`,
    );
    writeFileSync(join(ws, 'hello.txt'), 'hi there\n');
    const env = {
      PATH: process.env.PATH,
      HOME: join(ws, '.home'),
      XDG_DATA_HOME: join(ws, '.home', 'share'),
    };
    const code = await new Promise((done) => {
      const child = spawn(process.execPath, [BIN, 'run', '--yolo', 'update hello.txt to say hello, world'], {
        cwd: ws,
        env,
        stdio: 'ignore',
      });
      child.on('exit', done);
    });
    if (code !== 0) throw new Error(`svc run exited ${code}`);
    if (readFileSync(join(ws, 'hello.txt'), 'utf8') !== 'hello, world\n')
      throw new Error('hello.txt unchanged');
    const tokens = bodies.map((b) => Math.ceil(b.length / 4));
    const tools = bodies.map((b) => (JSON.parse(b).tools ?? []).length);
    return { tokens, total: tokens.reduce((a, b) => a + b, 0), tools };
  } finally {
    server.close();
    rmSync(ws, { recursive: true, force: true });
  }
}

export async function run() {
  const before = await runOnce('all');
  const after = await runOnce(undefined);
  return [
    { name: 'requests (steps)', value: String(after.tokens.length) },
    { name: 'before (tool_exposure all): input tokens, total', value: String(before.total) },
    { name: 'before: tools per request', value: before.tools.join(', ') },
    { name: 'after (auto, unknown window): tokens per step', value: after.tokens.join(', ') },
    { name: 'after: tools per request', value: after.tools.join(', ') },
    {
      name: 'after: input tokens, total',
      value: String(after.total),
      target: '< 20000',
      pass: after.total < 20_000,
    },
  ];
}
