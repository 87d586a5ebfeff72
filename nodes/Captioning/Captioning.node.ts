import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import * as account from './actions/account';
import * as job from './actions/job';
import { router } from './actions/router';
import * as upload from './actions/upload';

export class Captioning implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning',
		name: 'captioning',
		icon: { light: 'file:../../icons/captioning.svg', dark: 'file:../../icons/captioning.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description: 'Upload media, order captions (SRT, VTT, TXT, DOCX, JSON) and read jobs from the captioning service',
		defaults: { name: 'Captioning' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'captioningApi', required: true }],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				options: [
					{ name: 'Account', value: 'account' },
					{ name: 'Job', value: 'job' },
					{ name: 'Upload', value: 'upload' },
				],
				default: 'job',
			},
			...account.description,
			...job.description,
			...upload.description,
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
