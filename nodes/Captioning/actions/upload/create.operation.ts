import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { concurrencyField } from '../runState';
import type { InputFile } from '../../media/binary';
import { inputFileField, readInputFile } from '../../media/binary';
import { uploadFile } from '../../transport/files';

export const description = updateDisplayOptions(
	{ show: { resource: ['upload'], operation: ['create'] } },
	[inputFileField, concurrencyField],
);

/** Finds the file and checks its size: nothing is sent yet. */
export async function prepare(this: IExecuteFunctions, i: number): Promise<InputFile> {
	return await readInputFile(this, i);
}

export async function execute(
	this: IExecuteFunctions,
	i: number,
	file: InputFile,
): Promise<INodeExecutionData[]> {
	return [{ json: await uploadFile(this, file, i) }];
}
