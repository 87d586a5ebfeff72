// What Job → Create remembers across executions, in n8n's own deduplication store (the one behind
// Remove Duplicates: `processed_data`, scoped to this workflow and node). n8n writes it at once, so
// it survives what an execution's own data does not: a crash, a manual run, a failed run. It only
// answers "seen before?", so each record is a sentence whose last word is what a lookup tries.
import type { IExecuteFunctions } from 'n8n-workflow';

/** Enough for thousands of files; the oldest records go first (n8n trims them). */
const MAX_RECORDS = 10000;
const OPTIONS = { mode: 'entries' as const, maxEntries: MAX_RECORDS };

export class Remembered {
	/** n8n reads and writes the node's whole record per call: the calls of a run go one at a time. */
	private queue: Promise<unknown> = Promise.resolve();

	private constructor(private readonly ctx: IExecuteFunctions) {}

	/** The store of this node, or undefined where n8n offers none (an AI Agent's tool call, old n8n). */
	static of(ctx: IExecuteFunctions): Remembered | undefined {
		return typeof ctx.helpers.checkProcessedAndRecord === 'function' && ctx.getWorkflow().id ? new Remembered(ctx) : undefined;
	}

	private async serial<T>(call: () => Promise<T>): Promise<T> {
		const next = this.queue.then(call, call);
		this.queue = next.catch(() => undefined);
		return await next;
	}

	/** Records the sentences; returns those that were recorded before. */
	async record(sentences: string[]): Promise<Set<string>> {
		return await this.serial(async () => {
			const { processed } = await this.ctx.helpers.checkProcessedAndRecord(sentences, 'node', OPTIONS);
			return new Set(processed.map(String));
		});
	}

	/** Which of the sentences were recorded before, leaving the store as it was. */
	async known(sentences: string[]): Promise<Set<string>> {
		return await this.serial(async () => {
			const { processed, new: fresh } = await this.ctx.helpers.checkProcessedAndRecord(sentences, 'node', OPTIONS);
			if (fresh.length) await this.ctx.helpers.removeProcessed(fresh, 'node', OPTIONS);
			return new Set(processed.map(String));
		});
	}

	async forget(sentences: string[]): Promise<void> {
		if (sentences.length) await this.serial(async () => await this.ctx.helpers.removeProcessed(sentences, 'node', OPTIONS));
	}
}
