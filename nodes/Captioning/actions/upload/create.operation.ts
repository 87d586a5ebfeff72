import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { batchingField } from '../../helpers/batch';
import type { InputFile } from '../../helpers/binary';
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

const properties: INodeProperties[] = [inputFileField, batchingField];

export const description = updateDisplayOptions({ show: { resource: ['upload'], operation: ['create'] } }, properties);

/** Finds the file and checks its size: nothing is sent yet. */
export async function prepare(this: IExecuteFunctions, i: number): Promise<InputFile> {
	return await readInputFile(this, i, this.getNodeParameter('binaryPropertyName', i) as string);
}

export async function execute(this: IExecuteFunctions, i: number, file: InputFile): Promise<INodeExecutionData[]> {
	return [{ json: await uploadFile(this, file, i) }];
}
