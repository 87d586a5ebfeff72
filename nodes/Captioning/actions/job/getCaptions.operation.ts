import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { concurrencyField } from '../runState';
import type { CaptionSettings } from '../../captions';
import {
	binaryPropertyNameField,
	captionOutputs,
	captionSettings,
	captionsAsField,
	formatsField,
} from '../../captions';
import { readJob } from '../../transport/jobs';
import { getJobId, jobIdField } from './get.operation';

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['getCaptions'] } },
	[jobIdField, formatsField, captionsAsField, concurrencyField, binaryPropertyNameField],
);

/** The caption settings and the job ID, both checked before any request. */
type Prepared = CaptionSettings & { jobId: string };

export async function prepare(this: IExecuteFunctions, i: number): Promise<Prepared> {
	return { ...captionSettings(this, i), jobId: getJobId(this, i) };
}

export async function execute(
	this: IExecuteFunctions,
	i: number,
	prepared: Prepared,
): Promise<INodeExecutionData[]> {
	const job = await readJob(this, prepared.jobId, { itemIndex: i });
	const { binary, json } = await captionOutputs(this, i, job, prepared);
	return [{ json: { ...(job as unknown as IDataObject), ...json }, ...(binary ? { binary } : {}) }];
}
