import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import type { Account } from '../../model/types';
import { apiRequest } from '../../transport';

const properties: INodeProperties[] = [];

export const description = updateDisplayOptions(
	{ show: { resource: ['account'], operation: ['get'] } },
	properties,
);

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	const { body } = await apiRequest<Account>(this, 'GET', '/account', { itemIndex: i });
	return [{ json: body as unknown as INodeExecutionData['json'] }];
}
