/**
 * The genome's prompt section and its trace. The section is the genome's guidance, plus the last
 * reviewer findings when the genome has a review gate; the trace records what was last assembled
 * from the committed state (the ordering contract's step 2), also on the session's active run.
 * @module
 */
import { type AdaptiveContext, describe } from './context';
import { type Preset, renderGuidance } from './genome';
import { reviewPromptBlock } from './reviewer';
import { rowFingerprint } from './snapshot';

/** The prompt section of a session as last assembled from committed state. */
export interface PromptTrace {
  session_id: string;
  genome_fingerprint: string | null;
  revision: number;
  chars: number;
  review_included: boolean;
}

export interface PromptTraces {
  /** The system-prompt section of a top-level session (undefined: none, or not a root session). */
  promptSection(sessionId: string): Promise<{ source: string; text: string } | undefined>;
  /** Step 2 of the ordering contract: the trace of the committed state, recorded on the active run. */
  assemble(root: string): Promise<PromptTrace>;
  get(sessionId: string): PromptTrace | undefined;
}

export function createPromptTraces(ctx: AdaptiveContext): PromptTraces {
  const { store } = ctx;
  const traces = new Map<string, PromptTrace>();

  async function renderSection(
    root: string,
  ): Promise<{ text: string; review: boolean; preset: Preset } | undefined> {
    if (!ctx.enabled()) return undefined;
    const genome = ctx.genomeOf(await store.get(root));
    if (!genome) return undefined;
    const blocks = [renderGuidance(genome)];
    let review = false;
    if (genome.review_gate) {
      const latest = (await ctx.deps.runs.list({ session_id: root, status: ['completed'], limit: 1 }))[0];
      const last = latest ? (await store.reviews(root, 5)).find((r) => r.run_id === latest.id) : undefined;
      if (last && (last.status === 'approved' || last.status === 'changes_requested') && last.findings) {
        blocks.push(reviewPromptBlock(last.status, last.findings));
        review = true;
      }
    }
    return { text: blocks.join('\n\n'), review, preset: genome.choreography_preset };
  }

  const traceOf = async (
    root: string,
    section: Awaited<ReturnType<typeof renderSection>>,
  ): Promise<PromptTrace> => {
    const row = await store.get(root);
    const trace: PromptTrace = {
      session_id: root,
      genome_fingerprint: rowFingerprint(row) ?? null,
      revision: row?.revision ?? 0,
      chars: section?.text.length ?? 0,
      review_included: section?.review ?? false,
    };
    traces.set(root, trace);
    return trace;
  };

  return {
    async promptSection(sessionId) {
      if (!ctx.enabled() || !ctx.deps.dbPresent()) return undefined;
      try {
        const session = await ctx.deps.sessions.get(sessionId);
        if (!session || session.parent_id) return undefined;
        const section = await renderSection(sessionId);
        await traceOf(sessionId, section);
        return section ? { source: `adaptive genome ${section.preset}`, text: section.text } : undefined;
      } catch (error) {
        ctx.log.warn('adaptive prompt section failed', { session_id: sessionId, error: describe(error) });
        return undefined;
      }
    },
    async assemble(root) {
      const trace = await traceOf(root, await renderSection(root));
      const runId = (await ctx.safeState(root))?.run_id;
      if (runId) {
        await ctx.ledger(runId, 'adaptive.prompt_trace', {
          genome_fingerprint: trace.genome_fingerprint,
          revision: trace.revision,
          chars: trace.chars,
        });
      }
      return trace;
    },
    get: (sessionId) => traces.get(sessionId),
  };
}
