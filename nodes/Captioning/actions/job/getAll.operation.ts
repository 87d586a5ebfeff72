import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import {
	filtersWhileReading,
	metadataKeyField,
	metadataMatches,
	metadataValueField,
	titleMatches,
} from '../../listing/filters';
import type { Job } from '../../model/types';
import { jobPages } from '../../transport/jobs';
import { runStateOf } from '../runState';

const properties: INodeProperties[] = [
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		description: 'Whether to return all results or only up to a given limit',
	},
	{
		displayName: 'With Return All, a Metadata or Title filter reads the whole job history',
		name: 'filterNotice',
		type: 'notice',
		default: '',
		displayOptions: { show: { returnAll: [true] } },
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		displayOptions: { show: { returnAll: [false] } },
		typeOptions: { minValue: 1 },
		default: 50,
		description: 'Max number of results to return',
	},
	{
		displayName: 'Filters',
		name: 'filters',
		type: 'collection',
		placeholder: 'Add Filter',
		default: {},
		options: [
			{
				displayName: 'Status',
				name: 'status',
				type: 'options',
				options: [
					{ name: 'Cancelled', value: 'cancelled' },
					{ name: 'Completed', value: 'completed' },
					{ name: 'Processing', value: 'processing' },
					{ name: 'Queued', value: 'queued' },
				],
				default: 'completed',
				description: 'Only jobs with this status',
			},
			{ ...metadataKeyField, placeholder: 'e.g. drive_file_id' },
			{ ...metadataValueField, placeholder: 'e.g. 1AbC…' },
			{
				displayName: 'Title Contains',
				name: 'titleContains',
				type: 'string',
				default: '',
				placeholder: 'e.g. Weekly Show',
				description: 'Only jobs whose title contains this text (ignoring case)',
			},
		],
	},
];

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['getAll'] } },
	properties,
);

/**
 * Reads the list (by status) newest first until Limit jobs matched. Without a Metadata or Title
 * filter every job matches and a page asks only for what Limit still needs; with one, pages hold
 * 100 jobs and a read through to the end is noted as a read of the whole history.
 */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	const returnAll = this.getNodeParameter('returnAll', i) as boolean;
	const limit = returnAll ? Infinity : (this.getNodeParameter('limit', i) as number);
	const { status, ...filters } = this.getNodeParameter('filters', i, {}) as IDataObject;
	const filtered = filtersWhileReading(filters);
	const matches = (job: Job) => metadataMatches(job, filters) && titleMatches(job, filters);
	const max = filtered ? Infinity : limit;
	const pages = jobPages(this, status ? { status } : {}, { itemIndex: i, max });
	const found: Job[] = [];
	let read = 0;
	for await (const page of pages) {
		read += page.length;
		found.push(...page.filter(matches));
		if (found.length >= limit) break;
	}
	if (filtered && found.length < limit) {
		const wholeHistory = (runStateOf(this).notes.wholeHistory ??= { read: 0, matched: 0 });
		wholeHistory.read += read;
		wholeHistory.matched += found.length;
	}
	return found.slice(0, limit).map((job) => ({ json: job as unknown as IDataObject }));
}
