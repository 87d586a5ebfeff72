import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodePropertyOptions,
	INodeProperties,
} from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { inputFileField, readInputFile } from '../../media/binary';
import { MAX_INTERVAL_SECONDS, MAX_TIMEOUT_MINUTES } from '../../waiting/poll';
import type { JobSource } from '../../orders/body';
import { buildJobOptions, checkBodySize, sourceFields } from '../../orders/body';
import { concurrencyField, runStateOf } from '../runState';
import { checkCustomKey } from '../../orders/keys';
import type { Order } from '../../orders/keys';
import { placeOrder } from '../../orders/place';
import { replaysOf } from '../../orders/refusals';
import type { CreateJobBody } from '../../model/types';
import { headS3Object, LINK_HOURS, s3ObjectOf } from '../../s3/object';
import { refuse } from '../../transport/errors';
import { IN_PLACE_POLL_S, resumeUrlFor, waitForJobs } from '../../waiting/webhook';

/** Wait for Completion's choices; the AI Agent's tool offers all but On Webhook. */
const DONT_WAIT: INodePropertyOptions = {
	name: "Don't Wait",
	value: 'none',
	description: 'Output the job as ordered (status queued)',
};
const ON_WEBHOOK: INodePropertyOptions = {
	name: 'On Webhook',
	value: 'webhook',
	description: 'Sleep until the service reports every job done (needs n8n on public HTTPS)',
};
const POLL: INodePropertyOptions = {
	name: 'Poll',
	value: 'poll',
	description: 'Check the jobs at an interval (works anywhere, but holds the execution)',
};
const waitField: INodeProperties = {
	displayName: 'Wait for Completion',
	name: 'waitForCompletion',
	type: 'options',
	options: [DONT_WAIT, ON_WEBHOOK, POLL],
	default: 'none',
	description: 'Whether the node waits for the captions before passing the job on',
};

const properties: INodeProperties[] = [
	{
		displayName: 'Source',
		name: 'source',
		type: 'options',
		builderHint: {
			propertyHint:
				'binary after a node that downloads the file (Google Drive Download, HTTP Request); s3 for a video in an S3 bucket (bucket and key from an S3 listing, nothing downloaded); url for a public media link',
		},
		options: [
			{
				name: 'Binary File',
				value: 'binary',
				description: 'A file from an earlier node, uploaded and ordered in one step',
			},
			{
				name: 'Media URL',
				value: 'url',
				description: 'A public http(s) URL of a video or audio file, or a video-sharing link',
			},
			{
				name: 'S3 Object',
				value: 's3',
				description: 'An object in S3 or an S3-compatible store, fetched through a signed link',
			},
			{
				name: 'Upload ID',
				value: 'upload',
				description: 'The ID of a file already sent with Upload → Create',
			},
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
		displayName: 'Bucket Name',
		name: 's3Bucket',
		type: 'string',
		default: '',
		displayOptions: { show: { source: ['s3'] } },
		placeholder: 'e.g. my-videos',
		description: 'The bucket of the video, empty when Object Key is a whole s3://bucket/key',
	},
	{
		displayName: 'Object Key',
		name: 's3Key',
		type: 'string',
		default: '',
		required: true,
		displayOptions: { show: { source: ['s3'] } },
		placeholder: 'e.g. lectures/intro.mp4',
		description: "The object's key, e.g. Key from AWS S3 → Get Many, or a whole s3://bucket/key",
	},
	{
		displayName: 'Link Valid For (Hours)',
		name: 's3LinkHours',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: LINK_HOURS.max },
		default: 24,
		displayOptions: { show: { source: ['s3'] } },
		description: 'How long the signed link for the service stays valid, 1-167 hours',
	},
	{
		displayName: 'Title',
		name: 'title',
		type: 'string',
		default: '',
		placeholder: 'e.g. Interview with Maria',
		description: "The job's name in the dashboard and its caption files' name",
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
				description: 'Whether to caption meaningful sounds such as [MUSIC] (priced as an add-on)',
			},
			{
				displayName: 'Glossary',
				name: 'glossary',
				type: 'string',
				typeOptions: { multipleValues: true, multipleValueButtonText: 'Add Term' },
				default: [],
				placeholder: 'e.g. Kubernetes',
				description: 'Names and terms spelled as you want them, where the audio supports them',
			},
			{
				displayName: 'Metadata',
				name: 'metadata',
				type: 'fixedCollection',
				typeOptions: { multipleValues: true },
				placeholder: 'Add Pair',
				default: {},
				description: 'Key-value pairs returned on the job and its events, e.g. the Drive file ID',
				options: [
					{
						displayName: 'Pair',
						name: 'pair',
						values: [
							{
								displayName: 'Key',
								name: 'key',
								type: 'string',
								default: '',
								placeholder: 'e.g. drive_file_id',
							},
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
				description: 'How SRT and VTT mark speaker changes (ignored without Speaker Labels)',
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
					{
						name: 'Clean',
						value: 'clean',
						description: 'Removes fillers, false starts and stutters',
					},
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
				description: "HTTPS URL for the job's events, e.g. a Captioning Trigger's Production URL",
			},
		],
	},
	{
		displayName: 'Redactions',
		name: 'redactions',
		type: 'collection',
		placeholder: 'Add Redaction',
		default: {},
		description: 'Privacy controls for the caption text, priced as an add-on',
		options: [
			{
				displayName: 'Custom Replacement',
				name: 'customReplacement',
				type: 'string',
				default: '',
				placeholder: 'e.g. (removed)',
				description: 'The text for each redaction with Custom String, one line of 1-120 characters',
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
					{
						name: 'Category Label',
						value: 'category_label',
						description: 'A category such as [EMAIL]',
					},
					{
						name: 'Custom String',
						value: 'custom_string',
						description: 'The Custom Replacement text',
					},
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
				description: 'Your own terms to redact, one per entry (at most 200)',
			},
		],
	},
	{
		displayName: 'Idempotency',
		name: 'idempotency',
		type: 'options',
		builderHint: {
			propertyHint:
				"custom with a key built from the source file's ID (e.g. drive- followed by the Drive file ID) when a trigger hands over files, so each file is ordered and charged once; auto otherwise",
		},
		options: [
			{
				name: 'Automatic',
				value: 'auto',
				description: 'This node places and charges the same order once, whatever repeats it',
			},
			{
				name: 'Custom Key',
				value: 'custom',
				description: 'Your own key, e.g. the Drive file ID: this node orders each key once',
			},
			{ name: 'None', value: 'none', description: 'No key: every run orders and charges again' },
		],
		default: 'auto',
		description: 'How a repeated order is kept from creating a second job and a second charge',
	},
	{
		displayName: 'Idempotency Key',
		name: 'idempotencyKey',
		type: 'string',
		builderHint: {
			propertyHint:
				'A stable ID of the source file from the trigger, prefixed, e.g. drive- plus the Google Drive file ID',
		},
		default: '',
		required: true,
		displayOptions: { show: { idempotency: ['custom'] } },
		placeholder: 'e.g. drive-file-1a2b3c',
		description: "1-255 printable ASCII characters without spaces, e.g. drive- and the file's ID",
	},
	{
		...waitField,
		displayOptions: { hide: { '@tool': [true] } },
		builderHint: {
			propertyHint:
				'webhook when n8n is reachable over public HTTPS (durable, nothing held), with Timeout around 240 minutes; poll when it is not; none when a Captioning Trigger workflow stores the captions',
		},
	},
	// An AI Agent's tool call cannot sleep until a webhook: no On Webhook there.
	{ ...waitField, displayOptions: { show: { '@tool': [true] } }, options: [DONT_WAIT, POLL] },
	{
		displayName: 'Poll Interval (Seconds)',
		name: 'pollInterval',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_INTERVAL_SECONDS },
		default: 30,
		displayOptions: { show: { waitForCompletion: ['poll'] } },
		description: 'Seconds between checks of the job',
	},
	{
		displayName: 'Timeout (Minutes)',
		name: 'timeout',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_TIMEOUT_MINUTES },
		default: 120,
		displayOptions: { show: { waitForCompletion: ['poll', 'webhook'] } },
		description: 'How long to wait for the jobs, at most 35,791 minutes (24.8 days)',
	},
	concurrencyField,
];

export const description = updateDisplayOptions(
	{ show: { resource: ['job'], operation: ['create'] } },
	properties,
);

/** The item's media: a file's field, or an S3 object and its link's life (the title from them when empty). */
async function mediaOf(
	ctx: IExecuteFunctions,
	i: number,
	source: JobSource,
	body: CreateJobBody,
): Promise<Pick<Order, 'file' | 's3'>> {
	if (source === 'binary') {
		const file = await readInputFile(ctx, i);
		body.title ??= file.fileName;
		return { file };
	}
	if (source !== 's3') return {};
	const object = s3ObjectOf(ctx, i);
	const hours = Number(ctx.getNodeParameter('s3LinkHours', i, LINK_HOURS.default));
	if (!(hours >= 1 && hours <= LINK_HOURS.max))
		refuse(
			ctx,
			i,
			`Link Valid For is ${hours} hours`,
			`Set it to 1-${LINK_HOURS.max} hours (a signed S3 link may live a week at most, and the node signs it an hour longer than asked).`,
		);
	body.title ??= object.key.split('/').filter(Boolean).pop() ?? object.key;
	return { s3: { object, hours } };
}

/** Wait for Completion as the item asks and the run allows: its mode, Poll Interval and Timeout. */
function waitOf(ctx: IExecuteFunctions, i: number): Pick<Order, 'wait' | 'interval' | 'timeout'> {
	let wait = ctx.getNodeParameter('waitForCompletion', i) as Order['wait'];
	let interval = wait === 'poll' ? (ctx.getNodeParameter('pollInterval', i) as number) : 1;
	if (wait === 'webhook' && ctx.getNode().type.endsWith('Tool'))
		refuse(
			ctx,
			i,
			'Wait for Completion: On Webhook cannot be used by an AI Agent',
			"An agent's tool call cannot sleep until the service's events arrive. Set Wait for Completion to Poll, or to Don't Wait and read the job later with Job → Get. Nothing was ordered.",
		);
	if (wait === 'webhook' && ctx.getMode() === 'integrated') {
		// A sub-workflow: a parent that waits for it would get its own input back on n8n 1.x (and
		// whether it waits is not on n8n's node interface), so the jobs are waited for in place.
		wait = 'poll';
		interval = IN_PLACE_POLL_S;
		runStateOf(ctx).notes.webhookInPlace = 'subWorkflow';
	}
	const timeout = wait === 'none' ? 1 : (ctx.getNodeParameter('timeout', i) as number);
	const bounds = [
		['Timeout', timeout, MAX_TIMEOUT_MINUTES, 'minutes'],
		['Poll Interval', interval, MAX_INTERVAL_SECONDS, 'seconds'],
	] as const;
	for (const [field, value, max, unit] of bounds) {
		if (!(value >= 1))
			refuse(
				ctx,
				i,
				`${field} is ${value} ${unit}`,
				`Set ${field} to 1 or more. Nothing was ordered.`,
			);
		if (value > max)
			refuse(
				ctx,
				i,
				`${field} is ${value} ${unit}, more than the ${max.toLocaleString('en-US')} ${unit} (24.8 days) n8n's timers can wait`,
				`Set ${field} to at most ${max}. For jobs that may take longer, order with Don't Wait and let a Captioning Trigger start a workflow when each completes. Nothing was ordered.`,
			);
	}
	return { wait, interval, timeout };
}

/** The source field a Binary File or S3 Object adds once uploaded or signed, counted in before the limit. */
const SOURCE_ADDED_LATER: Partial<Record<JobSource, CreateJobBody>> = {
	binary: { upload_id: '00000000-0000-0000-0000-000000000000' },
	// A signed link is up to about 1.5 KiB (2 with a session token).
	s3: { media_url: 'x'.repeat(2048) },
};

/** Everything is checked before the first request of the batch: a mistake costs nothing. */
export async function prepare(this: IExecuteFunctions, i: number): Promise<Order> {
	const source = this.getNodeParameter('source', i) as JobSource;
	const body: CreateJobBody = { ...sourceFields(this, i, source), ...buildJobOptions(this, i) };
	const media = await mediaOf(this, i, source, body);
	checkBodySize(this, i, { ...body, ...SOURCE_ADDED_LATER[source] });
	const idempotency = this.getNodeParameter('idempotency', i) as Order['idempotency'];
	const customKey =
		idempotency === 'custom'
			? checkCustomKey(this, i, this.getNodeParameter('idempotencyKey', i) as string)
			: undefined;
	const wait = waitOf(this, i);
	if (wait.wait === 'webhook') body.webhook_url = resumeUrlFor(this, i, body);
	return { body, ...media, idempotency, customKey, ...wait };
}

/** An S3 Object's HEAD, for every item before the first order of the batch. */
export async function inspect(this: IExecuteFunctions, i: number, order: Order): Promise<void> {
	if (order.s3) order.s3.head = await headS3Object(this, i, order.s3.object);
}

export async function execute(
	this: IExecuteFunctions,
	i: number,
	order: Order,
): Promise<INodeExecutionData[]> {
	const batch = runStateOf(this);
	const placed = await placeOrder(this, i, order, batch.orders);
	batch.ordered.set(i, placed.job.id);
	batch.replays.add(replaysOf(order));
	let job = placed.job;
	if (order.wait === 'poll') job = await batch.waiter.wait(job, i, order.interval, order.timeout);
	if (order.wait === 'webhook' && placed.elsewhere) {
		// Its events go to the execution that ordered it: checked here until it ends or its Timeout passes.
		batch.notes.webhookInPlace = 'elsewhere';
		job = await batch.waiter.wait(job, i, IN_PLACE_POLL_S, order.timeout).catch(() => job);
	}
	// Once every item is ordered: the execution sleeps until the events say all jobs are final.
	if (order.wait === 'webhook') {
		batch.webhookTimeout = Math.max(batch.webhookTimeout, order.timeout);
		batch.afterRun ??= async (outputs) => await waitForJobs(this, outputs, batch.webhookTimeout);
	}
	return [{ json: { ...(job as unknown as IDataObject), idempotent_replayed: placed.replayed } }];
}
