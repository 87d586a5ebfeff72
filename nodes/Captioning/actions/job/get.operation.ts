import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import type { Job } from '../../model/types';
import { refuse } from '../../transport/errors';
import { readJob } from '../../transport/jobs';
import { jobIdField } from './common';

const properties: INodeProperties[] = [jobIdField];

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['get'] } },
	properties,
);

/** The item's job ID (from the list or by ID); refuses an empty one. */
export function getJobId(ctx: IExecuteFunctions, i: number): string {
	const id = String(ctx.getNodeParameter('jobId', i, '', { extractValue: true }) ?? '').trim();
	if (!id)
		refuse(ctx, i, 'Job is empty', 'Pick a job from the list, or give the ID Job → Create output.');
	return id;
}

/** Reads one job; refuses an empty Job ID before any request. */
export async function getJob(ctx: IExecuteFunctions, i: number): Promise<Job> {
	return await readJob(ctx, getJobId(ctx, i), { itemIndex: i });
}

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	return [{ json: (await getJob(this, i)) as unknown as INodeExecutionData['json'] }];
}
