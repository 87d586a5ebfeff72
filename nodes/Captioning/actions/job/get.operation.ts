import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { UUID_PATTERN } from '../../model/types';
import { refuse } from '../../transport/errors';
import { readJob } from '../../transport/jobs';

/** The job of Get and Get Captions: from the list of the newest, or by ID. */
export const jobIdField: INodeProperties = {
	displayName: 'Job',
	name: 'jobId',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description: 'A job from the list of the newest, or its ID, e.g. the ID output by Job → Create',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a job...',
			typeOptions: { searchListMethod: 'searchJobs', searchable: true },
		},
		{
			displayName: 'By ID',
			name: 'id',
			type: 'string',
			placeholder: 'e.g. 4f6c1e2a-9b7d-4c3e-8a1f-2d5e6b7c8a90',
			validation: [
				{
					type: 'regex',
					properties: {
						regex: UUID_PATTERN,
						errorMessage: 'A job ID is a UUID, e.g. 4f6c1e2a-9b7d-4c3e-8a1f-2d5e6b7c8a90',
					},
				},
			],
		},
	],
};

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['get'] } },
	[jobIdField],
);

/** The item's job ID (from the list or by ID); refuses an empty one. */
export function getJobId(ctx: IExecuteFunctions, i: number): string {
	const id = String(ctx.getNodeParameter('jobId', i, '', { extractValue: true }) ?? '').trim();
	if (!id)
		refuse(ctx, i, 'Job is empty', 'Pick a job from the list, or give the ID Job → Create output.');
	return id;
}

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	const job = await readJob(this, getJobId(this, i), { itemIndex: i });
	return [{ json: job as unknown as INodeExecutionData['json'] }];
}
