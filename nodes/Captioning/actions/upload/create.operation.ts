import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { readInputFile } from '../../helpers/binary';
import { uploadFile } from '../../transport/files';

export const inputFileField: INodeProperties = {
	displayName: 'Input Data Field Name',
	name: 'binaryPropertyName',
	type: 'string',
	default: 'data',
	required: true,
	placeholder: 'e.g. data',
	hint: 'The name of the input field containing the media file',
	description: 'The binary field of the input item that holds the video or audio file (up to 5242880000 bytes). It is streamed to the service, never loaded into memory whole.',
};

const properties: INodeProperties[] = [inputFileField];

export const description = updateDisplayOptions({ show: { resource: ['upload'], operation: ['create'] } }, properties);

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	const field = this.getNodeParameter('binaryPropertyName', i) as string;
	const file = await readInputFile(this, i, field);
	return [{ json: await uploadFile(this, file, i) }];
}
