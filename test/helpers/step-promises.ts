/**
 * The promises of a tool step, counted over whole runs against the scripted fake provider (its
 * server's promises included, the same in every build): the difference between a run of many echo
 * tool steps and one of few, a step (ENGINE-CPU-185, -192).
 */
import { agentApp, echoTool } from './agent-harness';
import { reply } from './fake-provider';
import { countPromises } from './promises';

/** The promises of one run of `steps` echo tool steps and a closing answer. */
async function promisesOfRun(steps: number): Promise<number> {
  const script = [
    ...Array.from({ length: steps }, (_, i) => reply().toolCall('echo', { text: `step ${i}` })),
    reply().text('done'),
  ];
  const { app } = await agentApp(script, { extraTools: [echoTool] });
  try {
    let status = '';
    const made = await countPromises(async () => {
      status = (await app.agent.run({ prompt: 'go', maxSteps: steps + 2, yolo: true })).status;
    });
    if (status !== 'completed') throw new Error(`the counted run ended ${status}, not completed`);
    return made;
  } finally {
    await app.close();
  }
}

/**
 * Promises a tool step: (a run of 12 steps − a run of 2) / 10, after a warm-up run, each run's
 * count the least of three (an earlier file's leftover work in the suite's shared worker, a close
 * or a timer landing in a run's window, only adds). The figure also depends on the machine and
 * the Node line (the official CI's Node 20 counted 241 where this box counts 214 for one tree):
 * a bound on it needs room (ENGINE-CPU-185).
 */
export async function promisesPerToolStep(): Promise<number> {
  await promisesOfRun(1); // the modules and the statements of a run prepared once
  const least = async (steps: number) => {
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) counts.push(await promisesOfRun(steps));
    return Math.min(...counts);
  };
  const few = await least(2);
  const many = await least(12);
  return (many - few) / 10;
}
