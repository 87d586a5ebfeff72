import type { INodeProperties } from 'n8n-workflow';

import * as create from './create.operation';

export { create };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['upload'] } },
		options: [
			{
				name: 'Create',
				value: 'create',
				description: 'Upload a media file from a binary field; its ID can then be a job source',
				action: 'Upload a media file',
			},
		],
		default: 'create',
	},
	...create.description,
];
