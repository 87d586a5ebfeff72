// Picks each item's operation and hands the items to the item loop (actions/items.ts), which checks
// them all first and runs them together within Batching → Concurrency.
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { DEFAULT_CONCURRENCY } from '../transport/concurrency';
import { showHints } from './hints';
import type { Operation } from './runItems';
import { runItems } from './runItems';
import * as account from './account';
import * as job from './job';
import * as upload from './upload';

const operations: Record<string, Record<string, Operation>> = {
	account: { get: account.get },
	job: {
		create: job.create as Operation,
		get: job.get,
		getAll: job.getAll,
		getCaptions: job.getCaptions as Operation,
	},
	upload: { create: upload.create as Operation },
};

/** The operations that offer Batching → Concurrency; the others send one request at a time. */
const BATCHING = new Set(['job:create', 'job:getCaptions', 'upload:create']);

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
	const operationFor = (i: number): Operation => {
		const resource = this.getNodeParameter('resource', i) as string;
		const operation = this.getNodeParameter('operation', i) as string;
		const found = operations[resource]?.[operation];
		if (found) return found;
		return {
			execute: async () => {
				throw new NodeOperationError(
					this.getNode(),
					`The operation "${operation}" of resource "${resource}" is not supported`,
					{ itemIndex: i },
				);
			},
		};
	};
	const batching = BATCHING.has(
		`${this.getNodeParameter('resource', 0)}:${this.getNodeParameter('operation', 0)}`,
	);
	const concurrency = batching
		? Number(this.getNodeParameter('batching.concurrency', 0, DEFAULT_CONCURRENCY))
		: 1;
	if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
		throw new NodeOperationError(this.getNode(), `Batching → Concurrency is ${concurrency}`, {
			description: 'Set it to a whole number of 1 or more (default 4).',
		});
	}
	const outputs = await runItems(this, { concurrency, operationFor });
	showHints(this, outputs);
	return [outputs];
}
