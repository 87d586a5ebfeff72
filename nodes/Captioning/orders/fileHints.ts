// What Job → Create records across executions, in n8n's own deduplication store (the one behind
// Remove Duplicates: `processed_data`, scoped to this workflow and node): hints that a file may have
// been sent before, each recorded once (the store answers "seen before?" as it records). n8n writes
// it at once, so it survives a crash, a manual run, a failed run. It is not the record of what was
// ordered (the service's job list is): a hint lost to two executions at once costs an upload, not a charge.
import type { IExecuteFunctions } from 'n8n-workflow';

/** Enough for thousands of files; the oldest records go first (n8n trims them). */
const MAX_RECORDS = 10000;
const OPTIONS = { mode: 'entries' as const, maxEntries: MAX_RECORDS };

export class FileHints {
	/** n8n reads and writes the node's whole record per call: the calls of a run go one at a time. */
	private queue: Promise<unknown> = Promise.resolve();

	private constructor(private readonly ctx: IExecuteFunctions) {}

	/** The store of this node, or undefined where n8n offers none (an AI Agent's tool call, old n8n). */
	static of(ctx: IExecuteFunctions): FileHints | undefined {
		return typeof ctx.helpers.checkProcessedAndRecord === 'function' && ctx.getWorkflow().id
			? new FileHints(ctx)
			: undefined;
	}

	private async serial<T>(call: () => Promise<T>): Promise<T> {
		const next = this.queue.then(call, call);
		this.queue = next.catch(() => undefined);
		return await next;
	}

	/** Records a file's probe (its size and first MiB); whether it was recorded before. */
	async seenBefore(probe: string): Promise<boolean> {
		return await this.serial(async () => {
			const { processed } = await this.ctx.helpers.checkProcessedAndRecord(
				[`probe ${probe}`],
				'node',
				OPTIONS,
			);
			return processed.length > 0;
		});
	}
}
