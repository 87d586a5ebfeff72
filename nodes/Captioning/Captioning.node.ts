import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import * as account from './actions/account';
import * as job from './actions/job';
import { searchJobs } from './listing/jobSearch';
import { formatNames } from './model/types';
import { resume } from './waiting/resume';
import { router } from './actions/router';
import * as upload from './actions/upload';

export class Captioning implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning',
		name: 'captioning',
		icon: {
			light: 'file:../../icons/captioning.svg',
			dark: 'file:../../icons/captioning.dark.svg',
		},
		group: ['transform'],
		// One version before the first release. From the first publish on, a change of behaviour goes
		// behind a new version, as n8n's own nodes do (CONTRIBUTING, "Versions").
		version: 1,
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description: `Upload media, order captions (${formatNames()}) and read jobs from the captioning service`,
		defaults: { name: 'Captioning' },
		// For n8n's AI workflow builder (2.x; 1.x ignores it): the Drive template's shape.
		builderHint: {
			searchHint: `Captions and transcripts for videos and audio (${formatNames()}). For "caption every new video in a folder": a Google Drive Trigger (file created in the folder), Google Drive Download, this node Job → Create from the Binary File with Idempotency Custom Key from the Drive file ID and Wait for Completion On Webhook, then Job → Get Captions, then Google Drive Upload of the SRT into the video's folder. Videos in S3: Source S3 Object.`,
			relatedNodes: [
				{
					nodeType: 'n8n-nodes-base.googleDriveTrigger',
					relationHint: 'Starts the workflow for each new video in a folder',
				},
				{
					nodeType: 'n8n-nodes-base.googleDrive',
					relationHint: 'Downloads the video before Job → Create, uploads its captions after',
				},
				{
					nodeType: 'n8n-nodes-base.awsS3',
					relationHint: 'Lists videos for Source S3 Object (no download), stores the captions',
				},
				{
					nodeType: 'n8n-nodes-captioning.captioningTrigger',
					relationHint: "Starts a second workflow when a job ordered with Don't Wait completes",
				},
			],
		},
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{ name: 'captioningApi', required: true },
			// Job → Create's S3 Object source signs with a credential of its own. Shown by `source`
			// alone: n8n 2.41.1's editor renders no parameters at all for a node whose credentials'
			// displayOptions name resource or operation (test/ui). Only Job → Create has `source`.
			{ name: 'captioningS3Api', required: true, displayOptions: { show: { source: ['s3'] } } },
		],
		// Job → Create's Wait for Completion: On Webhook resumes here ($execution.resumeUrl/<node id>).
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				responseData: '',
				path: '={{ $nodeId }}',
				restartWebhook: true,
				isFullPath: true,
			},
		],
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

	methods = { listSearch: { searchJobs } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}

	// n8n's community lint (webhook-lifecycle-complete) asks every node with a webhook for these. The
	// only webhook is a restart webhook, which n8n never registers on activation: nothing to create.
	webhookMethods = {
		default: { checkExists: async () => true, create: async () => true, delete: async () => true },
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		return await resume.call(this);
	}
}
