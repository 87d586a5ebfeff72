// Batching → Concurrency: the panel option of the operations that send files or order.
import type { INodeProperties } from 'n8n-workflow';

import { DEFAULT_CONCURRENCY } from '../transport/limits';

/** Batching → Concurrency, for the operations that send files or order. */
export const batchingField: INodeProperties = {
	displayName: 'Batching',
	name: 'batching',
	type: 'collection',
	placeholder: 'Add Option',
	default: {},
	options: [
		{
			displayName: 'Concurrency',
			name: 'concurrency',
			type: 'number',
			typeOptions: { minValue: 1, maxValue: 32 },
			default: DEFAULT_CONCURRENCY,
			description:
				'How many requests to the service may be under way at once for the items of one run',
		},
	],
};
