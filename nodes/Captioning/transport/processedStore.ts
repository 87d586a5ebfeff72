// n8n's own deduplication store (the one behind Remove Duplicates: `processed_data`, scoped to this
// workflow and node): what this node did before, each value recorded once (the store answers "seen
// before?" as it records). n8n writes it at once, so it survives a crash, a manual run, a failed
// run. Job → Create records the values of what it may have sent (an order's tag, a file's probe),
// the Captioning Trigger the news it reported (a job's final status). n8n reads and writes the
// node's whole record per call, so this process sends one call at a time per node; two processes
// at once may still lose a record.
import type { IExecuteFunctions } from 'n8n-workflow';

import { sleep } from './sleep';

/** At most 10000 records: enough for thousands of orders; the oldest go first (n8n trims them). */
const OPTIONS = { mode: 'entries' as const, maxEntries: 10000 };

/** The values that wait for the next call to the store, and what that call answers. */
interface Call {
	values: Set<string>;
	/** The values the store had recorded before (for a record), or undefined where that is unknown. */
	answer: Promise<Set<string> | undefined>;
}

/** The last call per workflow and node in this process: the next one starts after it. */
const queues = new Map<string, Promise<unknown>>();

export class ProcessedStore {
	/** Each call takes every value that came while the one before was under way (a batch is a call or two). */
	private next: { record?: Call; remove?: Call } = {};

	private constructor(
		private readonly ctx: IExecuteFunctions,
		private readonly queue: string,
	) {}

	/** The store of this node, or undefined where n8n offers none (an AI Agent's tool call, old n8n). */
	static of(ctx: IExecuteFunctions): ProcessedStore | undefined {
		const workflowId = ctx.getWorkflow().id;
		return typeof ctx.helpers.checkProcessedAndRecord === 'function' && workflowId
			? new ProcessedStore(ctx, `${workflowId}:${ctx.getNode().id}`)
			: undefined;
	}

	/** The call that takes `value`: the next one of its kind, started once those before it ended. */
	private join(
		kind: 'record' | 'remove',
		value: string,
		send: (values: string[]) => Promise<Set<string> | undefined>,
	): { call: Call; first: boolean } {
		let call = this.next[kind];
		if (!call) {
			const values = new Set<string>();
			const run = async () => {
				await sleep(0); // the values of items that reach this point together
				this.next[kind] = undefined;
				// Two processes that record a node's first values at once both insert its row, and n8n
				// fails the second insert on its unique key (queue mode): sent once more, the row is there.
				// Any other failure may have come after the write, so what the resend finds is unknown.
				return await send([...values]).catch(async (error: unknown) => {
					await sleep(100);
					const answer = await send([...values]);
					return /unique constraint/i.test((error as Error)?.message) ? answer : undefined;
				});
			};
			const answer = (queues.get(this.queue) ?? Promise.resolve()).then(run, run);
			const settled = answer.catch(() => undefined);
			queues.set(this.queue, settled);
			call = this.next[kind] = { values, answer };
		}
		const first = !call.values.has(value);
		call.values.add(value);
		return { call, first };
	}

	/** Records the value; whether it was recorded before, or undefined where the store cannot tell. */
	async record(value: string): Promise<boolean | undefined> {
		const { call, first } = this.join('record', value, async (values) => {
			const { processed } = await this.ctx.helpers.checkProcessedAndRecord(values, 'node', OPTIONS);
			return new Set(processed.map(String));
		});
		const recorded = await call.answer;
		// The same value twice in one call: the second finds the first's record.
		return first ? recorded?.has(value) : true;
	}

	/** Removes the value's record: what it named did not happen after all. */
	async remove(value: string): Promise<void> {
		const { call } = this.join('remove', value, async (values) => {
			await this.ctx.helpers.removeProcessed(values, 'node', OPTIONS);
			return undefined;
		});
		await call.answer;
	}
}
