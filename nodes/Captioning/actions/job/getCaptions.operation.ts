import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
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
import { jobIdField } from './common';
import { getJob, getJobId } from './get.operation';

const properties: INodeProperties[] = [
	jobIdField,
	formatsField,
	captionsAsField,
	concurrencyField,
	binaryPropertyNameField,
];

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['getCaptions'] } },
	properties,
);

export async function prepare(this: IExecuteFunctions, i: number): Promise<CaptionSettings> {
	const settings = captionSettings(this, i);
	getJobId(this, i);
	return settings;
}

export async function execute(
	this: IExecuteFunctions,
	i: number,
	settings: CaptionSettings,
): Promise<INodeExecutionData[]> {
	const job = await getJob(this, i);
	const { binary, json } = await captionOutputs(this, i, job, settings);
	return [{ json: { ...(job as unknown as IDataObject), ...json }, ...(binary ? { binary } : {}) }];
}
