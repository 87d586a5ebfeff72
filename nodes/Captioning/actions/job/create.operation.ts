import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { NodeOperationError, updateDisplayOptions } from 'n8n-workflow';

import type { InputFile } from '../../helpers/binary';
import { readInputFile } from '../../helpers/binary';
import type { JobSource } from '../../helpers/createJob';
import { buildJobOptions, checkBodySize, sourceFields } from '../../helpers/createJob';
import { automaticKey, checkCustomKey } from '../../helpers/idempotency';
import type { CreateJobBody, Job } from '../../helpers/types';
import { pollJob } from '../../helpers/wait';
import { apiRequest } from '../../transport';
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
			{ name: 'Poll', value: 'poll', description: 'Check the job at an interval and output it once completed or cancelled' },
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
		displayOptions: { show: { waitForCompletion: ['poll'] } },
		description: 'How long to wait before failing the item; the job itself goes on and is not charged again',
	},
];

export const description = updateDisplayOptions({ show: { resource: ['job'], operation: ['create'] } }, properties);

/**
 * Uploads an item's file once per execution: the upload id is kept in the node's execution
 * context, so a Retry On Fail reuses it and sends the same order (and so replays it).
 */
async function uploadOnce(ctx: IExecuteFunctions, i: number, file: InputFile, identity: string): Promise<string> {
	const context = ctx.getContext('node') as IDataObject;
	const uploads = (context.captioningUploads ??= {}) as Record<string, string>;
	const key = `${i}:${identity}`;
	uploads[key] ??= (await uploadFile(ctx, file, i)).id;
	return uploads[key];
}

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
	// Everything is checked before the first request: a mistake costs nothing.
	const source = this.getNodeParameter('source', i) as JobSource;
	const body: CreateJobBody = { ...sourceFields(this, i, source), ...buildJobOptions(this, i) };
	let file: InputFile | undefined;
	let identity = '';
	if (source === 'binary') {
		const field = this.getNodeParameter('binaryPropertyName', i) as string;
		file = await readInputFile(this, i, field);
		body.title ??= file.fileName;
		identity = this.getInputData()[i].binary?.[field]?.id ?? `${file.fileName}:${file.size}:${file.mimeType}`;
	}
	checkBodySize(this, i, source === 'binary' ? { ...body, upload_id: '00000000-0000-0000-0000-000000000000' } : body);
	const idempotency = this.getNodeParameter('idempotency', i) as 'auto' | 'custom' | 'none';
	const customKey = idempotency === 'custom' ? checkCustomKey(this, i, this.getNodeParameter('idempotencyKey', i) as string) : undefined;
	const wait = this.getNodeParameter('waitForCompletion', i) as 'none' | 'poll';
	const interval = wait === 'poll' ? (this.getNodeParameter('pollInterval', i) as number) : 0;
	const timeout = wait === 'poll' ? (this.getNodeParameter('timeout', i) as number) : 0;
	if (wait === 'poll' && !(interval >= 1 && timeout >= 1)) {
		throw new NodeOperationError(this.getNode(), 'Poll Interval and Timeout must be at least 1', { itemIndex: i, description: 'Set Poll Interval (seconds) and Timeout (minutes) to 1 or more.' });
	}

	if (file) body.upload_id = await uploadOnce(this, i, file, identity);
	const idempotencyKey = idempotency === 'auto' ? automaticKey(this, i, body) : customKey;
	const response = await apiRequest<Job>(this, 'POST', '/jobs', { body: body as IDataObject, idempotencyKey, itemIndex: i });
	let job = response.body;
	if (wait === 'poll') job = await pollJob(this, i, job, interval, timeout);
	return [{ json: { ...(job as unknown as IDataObject), idempotent_replayed: response.headers['idempotent-replayed'] === 'true' } }];
}
