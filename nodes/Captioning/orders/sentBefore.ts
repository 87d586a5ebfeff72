// Whether this node may have sent an order (or a file) before: hints in n8n's own deduplication
// store (the one behind Remove Duplicates: `processed_data`, scoped to this workflow and node),
// each recorded once (the store answers "seen before?" as it records). n8n writes it at once, so it
// survives a crash, a manual run, a failed run. It is not the record of what was ordered (the
// service's job list is): a hint says when to look there first, so that a first order costs no read.
// A hint lost to two executions at once costs a POST the Idempotency-Key still guards.
import type { IExecuteFunctions } from 'n8n-workflow';

import { sleep } from '../transport/sleep';

/** Enough for thousands of orders; the oldest records go first (n8n trims them). */
const MAX_RECORDS = 10000;
const OPTIONS = { mode: 'entries' as const, maxEntries: MAX_RECORDS };

/** The hints that wait for the next call to the store, and what that call answers. */
interface Call {
	hints: Set<string>;
	/** The hints the store had recorded before (for a record), or nothing (for a removal). */
	answer: Promise<Set<string>>;
}

export class SentBefore {
	/**
	 * n8n reads and writes the node's whole record per call: a run's calls go one at a time, and
	 * each takes every hint that came while the one before was under way (a batch of first orders
	 * is one or two calls, not one per item).
	 */
	private queue: Promise<unknown> = Promise.resolve();
	private next: { record?: Call; remove?: Call } = {};

	private constructor(private readonly ctx: IExecuteFunctions) {}

	/** The store of this node, or undefined where n8n offers none (an AI Agent's tool call, old n8n). */
	static of(ctx: IExecuteFunctions): SentBefore | undefined {
		return typeof ctx.helpers.checkProcessedAndRecord === 'function' && ctx.getWorkflow().id
			? new SentBefore(ctx)
			: undefined;
	}

	/** The call that takes `hint`: the next one of its kind, started once those before it ended. */
	private join(
		kind: 'record' | 'remove',
		hint: string,
		send: (hints: string[]) => Promise<Set<string>>,
	): { call: Call; first: boolean } {
		let call = this.next[kind];
		if (!call) {
			const hints = new Set<string>();
			const run = async () => {
				await sleep(0); // the hints of items that reach this point together
				if (this.next[kind] === call) this.next[kind] = undefined;
				return await send([...hints]);
			};
			const answer = this.queue.then(run, run);
			this.queue = answer.catch(() => undefined);
			call = this.next[kind] = { hints, answer };
		}
		const first = !call.hints.has(hint);
		call.hints.add(hint);
		return { call, first };
	}

	/** Records the hint (an order's tag, a file's probe); whether it was recorded before. */
	async record(hint: string): Promise<boolean> {
		const { call, first } = this.join('record', hint, async (hints) => {
			const { processed } = await this.ctx.helpers.checkProcessedAndRecord(hints, 'node', OPTIONS);
			return new Set(processed.map(String));
		});
		const recorded = (await call.answer).has(hint);
		// The same hint twice in one call: the second finds the first's record.
		return recorded || !first;
	}

	/** Removes the hint: what it named was never sent, or refused. */
	async remove(hint: string): Promise<void> {
		const { call } = this.join('remove', hint, async (hints) => {
			await this.ctx.helpers.removeProcessed(hints, 'node', OPTIONS);
			return new Set();
		});
		await call.answer;
	}
}
