import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { NodeOperationError, updateDisplayOptions } from 'n8n-workflow';

import { batchingField } from '../batching';
import type { CaptionsAs } from '../../captions';
import {
	captionOutputs,
	captionsAsField,
	captionsAsFor,
	captionsAsProblem,
	formatsField,
} from '../../captions';
import type { CaptionFormat } from '../../model/types';
import { formatNames } from '../../model/types';
import { jobIdField } from './common';
import { getJob, getJobId } from './get.operation';

const properties: INodeProperties[] = [
	jobIdField,
	formatsField,
	captionsAsField,
	batchingField,
	{
		displayName: 'Put Output File in Field',
		name: 'binaryPropertyName',
		type: 'string',
		default: 'data',
		required: true,
		displayOptions: { show: { captionsAs: ['binary', 'both'] } },
		hint: 'The name of the output binary field to put the file in',
		description:
			'With several formats, each file goes into this name followed by _ and the format, e.g. data_srt and data_vtt',
	},
];

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['getCaptions'] } },
	properties,
);

interface Download {
	formats: CaptionFormat[];
	field: string;
	as: CaptionsAs;
}

export async function prepare(this: IExecuteFunctions, i: number): Promise<Download> {
	const formats = this.getNodeParameter('formats', i) as CaptionFormat[];
	if (!formats.length) {
		throw new NodeOperationError(this.getNode(), 'No format is selected', {
			itemIndex: i,
			description: `Choose at least one of ${formatNames(' or ')} in Formats.`,
		});
	}
	const as = captionsAsFor(this, i);
	const problem = captionsAsProblem(formats, as);
	if (problem)
		throw new NodeOperationError(this.getNode(), "DOCX cannot go into the item's JSON", {
			itemIndex: i,
			description: `${problem}.`,
		});
	getJobId(this, i);
	return {
		formats,
		field: as === 'json' ? 'data' : (this.getNodeParameter('binaryPropertyName', i) as string),
		as,
	};
}

export async function execute(
	this: IExecuteFunctions,
	i: number,
	{ formats, field, as }: Download,
): Promise<INodeExecutionData[]> {
	const job = await getJob(this, i);
	const { binary, json } = await captionOutputs(this, i, job, formats, field, as);
	return [{ json: { ...(job as unknown as IDataObject), ...json }, ...(binary ? { binary } : {}) }];
}
