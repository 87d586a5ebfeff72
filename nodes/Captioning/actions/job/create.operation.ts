import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeOperationError, updateDisplayOptions } from 'n8n-workflow';

import type { InputFile } from '../../helpers/binary';
import { readInputFile } from '../../helpers/binary';
import type { JobSource } from '../../helpers/createJob';
import { buildJobOptions, checkBodySize, sourceFields } from '../../helpers/createJob';
import { batchingField, batchOf } from '../../helpers/batch';
import { automaticKey, canonicalJson, checkCustomKey } from '../../helpers/idempotency';
import type { CaptioningEvent } from '../../helpers/events';
import { eventProblem, readBackEvent, respond } from '../../helpers/events';
import type { CreateJobBody, Job } from '../../helpers/types';
import { apiRequest, segment } from '../../transport';
import { uploadFile } from '../../transport/files';
import { inputFileField } from '../upload/create.operation';

const properties: INodeProperties[] = [
	{
		displayName: 'Source',
		name: 'source',
		type: 'options',
		options: [
			{ name: 'Binary File', value: 'binary', description: 'A file from an earlier node (Google Drive, S3, HTTP Request…): uploaded, then ordered, in one step' },
			{ name: 'Media URL', value: 'url', description: 'A public http(s) URL of a video or audio file, or a video-sharing link' },
			{ name: 'Upload ID', value: 'upload', description: 'The ID of a file already sent with Upload → Create' },
		],
		default: 'binary',
		description: 'Where the media to caption comes from',
	},
	{ ...inputFileField, displayOptions: { show: { source: ['binary'] } } },
	{
		displayName: 'Media URL',
		name: 'mediaUrl',
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { source: ['url'] } },
		placeholder: 'e.g. https://example.com/interview.mp4',
		description: 'Public HTTP or HTTPS URL of the video or audio file',
	},
	{
		displayName: 'Upload ID',
		name: 'uploadId',
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { source: ['upload'] } },
		placeholder: 'e.g. 9b2f0c4e-1d3a-4e5f-8a7b-6c5d4e3f2a10',
		description: 'The ID output by Upload → Create',
	},
	{
		displayName: 'Title',
		name: 'title',
		type: 'string',
		default: '',
		placeholder: 'e.g. Interview with Maria',
		description: 'Shown in the dashboard and used as the captions\' file name. Empty: the file name for a Binary File source, otherwise the job ID. The service allows 300 characters by default.',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [
			{
				displayName: 'Atmospherics',
				name: 'atmospherics',
				type: 'boolean',
				default: true,
				description: 'Whether to caption meaningful non-speech sounds such as [MUSIC] or [LAUGHTER]. Costs extra: priced as an add-on, as in the dashboard checkout.',
			},
			{
				displayName: 'Glossary',
				name: 'glossary',
				type: 'string',
				typeOptions: { multipleValues: true, multipleValueButtonText: 'Add Term' },
				default: [],
				placeholder: 'e.g. Kubernetes',
				description: 'Names and terms with their preferred spelling, used where the audio supports them (200 terms of 100 characters by default)',
			},
			{
				displayName: 'Metadata',
				name: 'metadata',
				type: 'fixedCollection',
				typeOptions: { multipleValues: true },
				placeholder: 'Add Pair',
				default: {},
				description: 'Your key-value pairs, returned on the job and in its events (e.g. the Drive file ID, to match the captions to the file later). 20 keys by default; keys 1-40 characters, values up to 500.',
				options: [
					{
						displayName: 'Pair',
						name: 'pair',
						values: [
							{ displayName: 'Key', name: 'key', type: 'string', default: '', placeholder: 'e.g. drive_file_id' },
							{ displayName: 'Value', name: 'value', type: 'string', default: '' },
						],
					},
				],
			},
			{
				displayName: 'Model',
				name: 'model',
				type: 'options',
				options: [{ name: 'Captioner Base', value: 'captioner-base' }],
				default: 'captioner-base',
				description: 'The transcription model (captioner-base is the only one offered)',
			},
			{
				displayName: 'Profanity',
				name: 'profanity',
				type: 'options',
				options: [
					{ name: 'As Spoken', value: 'as_spoken', description: 'Keep the words' },
					{ name: 'Label', value: 'label', description: 'Replace with [expletive]' },
					{ name: 'Mask', value: 'mask', description: 'Keep the first letter: f***' },
					{ name: 'Omit', value: 'omit', description: 'Leave the words out' },
				],
				default: 'as_spoken',
				description: 'How profanity appears in the captions (the audio is never changed)',
			},
			{
				displayName: 'Speaker Label Style',
				name: 'speakerLabelStyle',
				type: 'options',
				options: [
					{ name: '>> NAME:', value: 'gt_name' },
					{ name: '[NAME]', value: 'brackets' },
					{ name: 'Dashes Without Names', value: 'dashes' },
					{ name: 'NAME:', value: 'colon' },
				],
				default: 'gt_name',
				description: 'How speaker changes are marked in SRT and VTT (ignored without speaker labels)',
			},
			{
				displayName: 'Speaker Labels',
				name: 'speakerLabels',
				type: 'boolean',
				default: true,
				description: 'Whether to identify speaker turns',
			},
			{
				displayName: 'Style',
				name: 'style',
				type: 'options',
				options: [
					{ name: 'Clean', value: 'clean', description: 'Removes fillers, false starts and stutters' },
					{ name: 'Verbatim', value: 'verbatim', description: 'Keeps every spoken word' },
				],
				default: 'clean',
				description: 'Transcription style',
			},
			{
				displayName: 'Webhook URL',
				name: 'webhookUrl',
				type: 'string',
				default: '',
				placeholder: 'e.g. https://n8n.example.com/webhook/…/captioning',
				description: 'HTTPS URL the service calls when the job completes or is cancelled. To start a workflow then, add a Captioning Trigger to that workflow and paste its Production URL here (open the trigger and click Webhook URLs → Production). The service does not follow redirects.',
			},
		],
	},
	{
		displayName: 'Redactions',
		name: 'redactions',
		type: 'collection',
		placeholder: 'Add Redaction',
		default: {},
		description: 'Privacy controls for the caption text (the media is not changed). Costs extra: priced as an add-on, as in the dashboard checkout.',
		options: [
			{
				displayName: 'Custom Replacement',
				name: 'customReplacement',
				type: 'string',
				default: '',
				placeholder: 'e.g. (removed)',
				description: 'The text that replaces each redaction when Replacement is Custom String: one line, 1-120 characters',
			},
			{
				displayName: 'Names',
				name: 'names',
				type: 'boolean',
				default: false,
				description: 'Whether to redact named individuals',
			},
			{
				displayName: 'Organizations',
				name: 'organizations',
				type: 'boolean',
				default: false,
				description: 'Whether to redact organization names',
			},
			{
				displayName: 'Personal Data',
				name: 'pii',
				type: 'boolean',
				default: false,
				description: 'Whether to redact personal data such as e-mail addresses and phone numbers',
			},
			{
				displayName: 'Replacement',
				name: 'replacement',
				type: 'options',
				options: [
					{ name: 'Category Label', value: 'category_label', description: 'A category such as [EMAIL]' },
					{ name: 'Custom String', value: 'custom_string', description: 'The Custom Replacement text' },
					{ name: 'Redacted', value: 'redacted', description: '[REDACTED]' },
					{ name: 'Silent', value: 'silent', description: 'Nothing' },
				],
				default: 'category_label',
				description: 'What replaces redacted text',
			},
			{
				displayName: 'Terms',
				name: 'terms',
				type: 'string',
				typeOptions: { multipleValues: true, multipleValueButtonText: 'Add Term' },
				default: [],
				description: 'Your own terms to redact, one per entry: each a nonblank single line, at most 200',
			},
		],
	},
	{
		displayName: 'Idempotency',
		name: 'idempotency',
		type: 'options',
		options: [
			{ name: 'Automatic', value: 'auto', description: 'A key from this execution, node, item and order: retries (the node\'s own and Retry On Fail) never order or charge twice' },
			{ name: 'Custom Key', value: 'custom', description: 'Your own key, e.g. the Drive file ID: the same key and order never create a second job, even across executions' },
			{ name: 'None', value: 'none', description: 'No key: each run orders and charges again, and a failed order is not retried' },
		],
		default: 'auto',
		description: 'How the node keeps a retried order from creating a second job and a second charge',
	},
	{
		displayName: 'Idempotency Key',
		name: 'idempotencyKey',
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { idempotency: ['custom'] } },
		placeholder: 'e.g. drive-file-1a2b3c',
		description: '1-255 printable ASCII characters without spaces. Reusing it with a different order is refused by the service.',
	},
	{
		displayName: 'Wait for Completion',
		name: 'waitForCompletion',
		type: 'options',
		options: [
			{ name: "Don't Wait", value: 'none', description: 'Output the job as ordered (status queued)' },
			{
				name: 'On Webhook',
				value: 'webhook',
				description: 'Put the execution to sleep and resume it when the service reports the job completed or cancelled. n8n must be reachable over HTTPS; one item per execution.',
			},
			{ name: 'Poll', value: 'poll', description: 'Check the job at an interval and output it once completed or cancelled. All items of a run are ordered first and checked together.' },
		],
		default: 'none',
		description: 'Whether the node waits for the captions before passing the job on',
	},
	{
		displayName: 'Poll Interval (Seconds)',
		name: 'pollInterval',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 30,
		displayOptions: { show: { waitForCompletion: ['poll'] } },
		description: 'Seconds between checks of the job',
	},
	{
		displayName: 'Timeout (Minutes)',
		name: 'timeout',
		type: 'number',
		typeOptions: { minValue: 1 },
		default: 120,
		displayOptions: { show: { waitForCompletion: ['poll', 'webhook'] } },
		description: 'How long to wait. Poll then fails the item; On Webhook resumes with the job as ordered. The job itself goes on and is not charged again.',
	},
	batchingField,
];

export const description = updateDisplayOptions({ show: { resource: ['job'], operation: ['create'] } }, properties);

/**
 * Uploads an item's file once per execution: the upload id is kept in the node's execution
 * context, so a Retry On Fail reuses it and sends the same order (and so replays it).
 */
async function uploadOnce(ctx: IExecuteFunctions, i: number, file: InputFile): Promise<string> {
	const context = ctx.getContext('node') as IDataObject;
	const uploads = (context.captioningUploads ??= {}) as Record<string, string>;
	const key = `${i}:${file.identity}`;
	uploads[key] ??= (await uploadFile(ctx, file, i)).id;
	return uploads[key];
}

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS, and one execution waits for one job.
 */
function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (ctx.getInputData().length !== 1) {
		throw new NodeOperationError(ctx.getNode(), `Wait for Completion: On Webhook takes one item per execution; this node received ${ctx.getInputData().length}`, {
			itemIndex: i,
			description: 'An execution can wait for one job. For batches use Wait for Completion: Poll, or send each item to its own execution (e.g. an Execute Workflow node).',
		});
	}
	if (body.webhook_url) {
		throw new NodeOperationError(ctx.getNode(), 'Options → Webhook URL cannot be combined with Wait for Completion: On Webhook', {
			itemIndex: i,
			description: 'On Webhook gives the service this execution\'s own resume URL. Remove Options → Webhook URL, or wait with Poll (or a Captioning Trigger).',
		});
	}
	// As n8n's Wait node: $execution.resumeUrl (which carries the execution's resume token where n8n
	// has one), then this node's id, the path of the restart webhook below.
	const resume = new URL(String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i)));
	resume.pathname = `${resume.pathname.replace(/\/$/, '')}/${ctx.getNode().id}`;
	const url = resume.toString();
	if (!url.startsWith('https://')) {
		throw new NodeOperationError(ctx.getNode(), `n8n's webhook address ${new URL(url).origin} is not HTTPS, and the service only calls https:// URLs`, {
			itemIndex: i,
			description: 'Serve n8n over HTTPS and set the WEBHOOK_URL environment variable to its public https:// address, or set Wait for Completion to Poll. Nothing was ordered.',
		});
	}
	return url;
}

/**
 * Resumes an execution waiting in Job → Create (On Webhook) with the job of the service's event.
 * n8n checks the resume token in the URL; the event is also checked against the job as read
 * back, which must have been ordered with this execution's URL.
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	const read = await readBackEvent(this, event);
	if ('error' in read) return respond(this, read.status, { error: read.error });
	const { job } = read;
	return {
		webhookResponse: { received: true, resumed: true },
		workflowData: [[{ json: { ...(job as unknown as IDataObject), event_id: event.id, event_type: event.type } }]],
	};
}

/** An item's order, checked and ready: nothing has been sent yet. */
export interface Order {
	body: CreateJobBody;
	file?: InputFile;
	idempotency: 'auto' | 'custom' | 'none';
	customKey?: string;
	wait: 'none' | 'poll' | 'webhook';
	interval: number;
	timeout: number;
}

/** Everything is checked before the first request of the batch: a mistake costs nothing. */
export async function prepare(this: IExecuteFunctions, i: number): Promise<Order> {
	const source = this.getNodeParameter('source', i) as JobSource;
	const body: CreateJobBody = { ...sourceFields(this, i, source), ...buildJobOptions(this, i) };
	let file: InputFile | undefined;
	if (source === 'binary') {
		const field = this.getNodeParameter('binaryPropertyName', i) as string;
		file = await readInputFile(this, i, field);
		body.title ??= file.fileName;
	}
	checkBodySize(this, i, source === 'binary' ? { ...body, upload_id: '00000000-0000-0000-0000-000000000000' } : body);
	const idempotency = this.getNodeParameter('idempotency', i) as Order['idempotency'];
	const customKey = idempotency === 'custom' ? checkCustomKey(this, i, this.getNodeParameter('idempotencyKey', i) as string) : undefined;
	const wait = this.getNodeParameter('waitForCompletion', i) as Order['wait'];
	const interval = wait === 'poll' ? (this.getNodeParameter('pollInterval', i) as number) : 1;
	const timeout = wait === 'none' ? 1 : (this.getNodeParameter('timeout', i) as number);
	if (!(interval >= 1 && timeout >= 1)) {
		throw new NodeOperationError(this.getNode(), 'Poll Interval and Timeout must be at least 1', { itemIndex: i, description: 'Set Poll Interval (seconds) and Timeout (minutes) to 1 or more.' });
	}
	if (wait === 'webhook') body.webhook_url = resumeUrlFor(this, i, body);
	return { body, file, idempotency, customKey, wait, interval, timeout };
}

/**
 * Sends the order. With a key, a repeat (the transport's retry, n8n's Retry On Fail) is replayed by
 * the service; without one, a Retry On Fail in this execution reads back the job it already
 * ordered instead of ordering again.
 */
async function placeOrder(ctx: IExecuteFunctions, i: number, order: Order, body: CreateJobBody): Promise<{ job: Job; replayed: boolean }> {
	const withoutKey = (ctx.getContext('node') as IDataObject).captioningOrders as Record<string, string> | undefined;
	const mark = `${i}:${canonicalJson(body)}`;
	if (order.idempotency === 'none' && withoutKey?.[mark]) {
		return { job: (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(withoutKey[mark])}`, { itemIndex: i })).body, replayed: true };
	}
	const idempotencyKey = order.idempotency === 'auto' ? automaticKey(ctx, i, body) : order.customKey;
	const response = await apiRequest<Job>(ctx, 'POST', '/jobs', { body: body as IDataObject, idempotencyKey, itemIndex: i });
	if (order.idempotency === 'none') {
		const context = ctx.getContext('node') as IDataObject;
		((context.captioningOrders ??= {}) as Record<string, string>)[mark] = response.body.id;
	}
	return { job: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
}

export async function execute(this: IExecuteFunctions, i: number, order: Order): Promise<INodeExecutionData[]> {
	const body = { ...order.body };
	if (order.file) body.upload_id = await uploadOnce(this, i, order.file);
	const batch = batchOf(this);
	const placed = await placeOrder(this, i, order, body);
	batch.ordered.set(i, placed.job.id);
	let job = placed.job;
	if (order.wait === 'poll') job = await batch.waiter.wait(job, i, order.interval, order.timeout);
	// The output until the service's event resumes the execution (or the timeout does, with this job).
	if (order.wait === 'webhook') await this.putExecutionToWait(new Date(Date.now() + order.timeout * 60000));
	return [{ json: { ...(job as unknown as IDataObject), idempotent_replayed: placed.replayed } }];
}
