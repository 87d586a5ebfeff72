// Whether this node may have sent an order (or a file) before: hints in n8n's own deduplication
// store (the one behind Remove Duplicates: `processed_data`, scoped to this workflow and node),
// each recorded once (the store answers "seen before?" as it records). n8n writes it at once, so it
// survives a crash, a manual run, a failed run. It is not the record of what was ordered (the
// service's job list is): a hint says when to look there first, so that a first order costs no read.
// A hint lost to two executions at once costs a POST the Idempotency-Key still guards.
import type { IExecuteFunctions } from 'n8n-workflow';

/** Enough for thousands of orders; the oldest records go first (n8n trims them). */
const MAX_RECORDS = 10000;
const OPTIONS = { mode: 'entries' as const, maxEntries: MAX_RECORDS };

export class SentBefore {
	/** n8n reads and writes the node's whole record per call: the calls of a run go one at a time. */
	private queue: Promise<unknown> = Promise.resolve();

	private constructor(private readonly ctx: IExecuteFunctions) {}

	/** The store of this node, or undefined where n8n offers none (an AI Agent's tool call, old n8n). */
	static of(ctx: IExecuteFunctions): SentBefore | undefined {
		return typeof ctx.helpers.checkProcessedAndRecord === 'function' && ctx.getWorkflow().id
			? new SentBefore(ctx)
			: undefined;
	}

	private async serial<T>(call: () => Promise<T>): Promise<T> {
		const next = this.queue.then(call, call);
		this.queue = next.catch(() => undefined);
		return await next;
	}

	/** Records the hint (an order's tag, a file's probe); whether it was recorded before. */
	async record(hint: string): Promise<boolean> {
		return await this.serial(async () => {
			const { processed } = await this.ctx.helpers.checkProcessedAndRecord([hint], 'node', OPTIONS);
			return processed.length > 0;
		});
	}

	/** Removes the hint: what it named was never sent, or refused. */
	async remove(hint: string): Promise<void> {
		await this.serial(async () => await this.ctx.helpers.removeProcessed([hint], 'node', OPTIONS));
	}
}
