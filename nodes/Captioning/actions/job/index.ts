import type { INodeProperties } from 'n8n-workflow';

import { formatNames } from '../../model/types';
import * as create from './create.operation';
import * as get from './get.operation';
import * as getAll from './getAll.operation';
import * as getCaptions from './getCaptions.operation';

export { create, get, getAll, getCaptions };

export const description: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		displayOptions: { show: { resource: ['job'] } },
		options: [
			{
				name: 'Create',
				value: 'create',
				description: 'Order captions for a file, URL, S3 object or upload, and optionally wait',
				action: 'Order captions',
			},
			{
				name: 'Get',
				value: 'get',
				description: 'Get a caption job: status, progress, cost and caption links',
				action: 'Get a job',
			},
			{
				name: 'Get Captions',
				value: 'getCaptions',
				description: `Download the captions of a completed job as files (${formatNames()}), or as text in the item (the transcript an AI Agent reads)`,
				action: 'Get captions of a job as transcript text or files',
			},
			{
				name: 'Get Many',
				value: 'getAll',
				description: 'List caption jobs, newest first',
				action: 'Get many jobs',
			},
		],
		default: 'create',
	},
	...create.description,
	...get.description,
	...getAll.description,
	...getCaptions.description,
];
