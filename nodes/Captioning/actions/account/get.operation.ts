import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { apiRequest } from '../../transport';

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	const { body } = await apiRequest<IDataObject>(this, 'GET', '/account', { itemIndex: i });
	return [{ json: body }];
}
