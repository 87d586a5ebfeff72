// Caption files: the formats a user picks, and downloading a completed job's captions as n8n
// binary files, as text in the item's JSON, or both (Job → Get Captions and both triggers' Attach
// Captions).
import type { IBinaryKeyData, IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { Download } from '../transport/files';
import { downloadFile } from '../transport/files';
import { refuse } from '../transport/errors';
import type { CaptionFormat, Job } from '../model/types';
import { CAPTION_FORMATS, formatNames } from '../model/types';

export const formatsField: INodeProperties = {
	displayName: 'Formats',
	name: 'formats',
	type: 'multiOptions',
	// Sorted by code point (localeCompare would load ICU's collator when the package loads).
	options: Object.entries(CAPTION_FORMATS)
		.map(([value, { label }]) => ({ name: label, value }))
		.sort((a, b) => (a.name < b.name ? -1 : 1)),
	default: ['srt'],
	required: true,
	description: 'The caption files to download (several: one output field each)',
};

type CaptionsAs = 'binary' | 'json' | 'both';

/**
 * The most characters of one format the item's JSON takes: an hour of subtitles is about 60,000,
 * so this holds some 15 hours, beyond the service's 12-hour default, while keeping execution data
 * (saved with every execution) bounded. Above it the text is cut at a line end, and
 * `caption_truncated` names the format; the binary file (Both) is always whole.
 */
export const TEXT_CHARS = 1_000_000;

export const captionsAsField: INodeProperties = {
	displayName: 'Put Captions In',
	name: 'captionsAs',
	type: 'options',
	options: [
		{
			name: 'Binary Files',
			value: 'binary',
			description: 'Files for a storage node (Google Drive, S3, Write Files to Disk)',
		},
		{
			name: 'Item JSON (Text)',
			value: 'json',
			description: "The text in caption_text, the JSON format's segments in caption_segments",
		},
		{ name: 'Both', value: 'both', description: 'The files, and their text in the JSON' },
	],
	default: 'binary',
	description: "Where the captions go: files, their text in the item's JSON, or both",
};

export const binaryPropertyNameField: INodeProperties = {
	displayName: 'Put Output File in Field',
	name: 'binaryPropertyName',
	type: 'string',
	default: 'data',
	required: true,
	displayOptions: { show: { captionsAs: ['binary', 'both'] } },
	hint: 'The name of the output binary field to put the file in',
	description: 'With several formats, each file gets its own field, e.g. data_srt and data_vtt',
};

/** The captions a node is set to download: which formats, where they go, and the binary field. */
export type CaptionSettings = { formats: CaptionFormat[]; as: CaptionsAs; field: string };

/**
 * The caption settings of item i, refused before any request when they cannot work: no format, or
 * DOCX (no text) for the JSON alone. As a tool, the text always comes in the JSON.
 */
export function captionSettings(ctx: IExecuteFunctions, i: number): CaptionSettings {
	const formats = ctx.getNodeParameter('formats', i, []) as CaptionFormat[];
	if (!formats.length)
		refuse(ctx, i, 'No format is selected', `Choose ${formatNames(' or ')} in Formats.`);
	const chosen = ctx.getNodeParameter('captionsAs', i, 'binary') as CaptionsAs;
	const as = ctx.getNode().type.endsWith('Tool') && chosen === 'binary' ? 'both' : chosen;
	if (as === 'json' && formats.some((format) => CAPTION_FORMATS[format].json === 'file')) {
		throw new NodeOperationError(ctx.getNode(), "DOCX cannot go into the item's JSON", {
			itemIndex: i,
			description:
				"DOCX is a Word file and has no text for the item's JSON: choose Put Captions In: Both (DOCX as a file, the other formats as text too), or TXT instead of DOCX in Formats.",
		});
	}
	const field =
		as === 'json' ? 'data' : (ctx.getNodeParameter('binaryPropertyName', i, 'data') as string);
	return { formats, as, field };
}

/** Text cut at the last line end within the limit. */
function bounded(text: string): { text: string; truncated: boolean } {
	if (text.length <= TEXT_CHARS) return { text, truncated: false };
	const cut = text.lastIndexOf('\n', TEXT_CHARS);
	return { text: text.slice(0, cut > 0 ? cut + 1 : TEXT_CHARS), truncated: true };
}

/** The JSON format's segments (as many as fit the limit), or the document itself if it has none. */
function segmentsOf(
	ctx: IExecuteFunctions,
	i: number,
	job: Job,
	data: Buffer,
): { json: IDataObject; truncated: boolean } {
	let doc: unknown;
	try {
		doc = JSON.parse(data.toString('utf8'));
	} catch {
		refuse(
			ctx,
			i,
			`The JSON captions of job ${job.id} are not valid JSON`,
			'Choose Binary Files to get the file as the service sent it, or another format.',
		);
	}
	const segments = (doc as { segments?: unknown }).segments;
	if (!Array.isArray(segments))
		return { json: { caption_json: doc as IDataObject }, truncated: false };
	const within: IDataObject[] = [];
	let size = 0;
	for (const segment of segments as IDataObject[]) {
		size += JSON.stringify(segment).length;
		if (size > TEXT_CHARS) return { json: { caption_segments: within }, truncated: true };
		within.push(segment);
	}
	return { json: { caption_segments: within }, truncated: false };
}

/** A file name from the job title: what the service uses as the download name, made safe for disks. */
function captionFileName(job: Job, format: CaptionFormat): string {
	// Characters no disk accepts in a name, and control characters.
	// eslint-disable-next-line no-control-regex
	const unsafe = /[\\/:*?"<>|\u0000-\u001f]+/g;
	const base = (job.title || job.id)
		.replace(unsafe, '_')
		.replace(/^[.\s]+|[.\s]+$/g, '')
		.slice(0, 200);
	return `${base || job.id}.${format}`;
}

/** A format whose file could not be downloaded, and why. */
type CaptionFailure = { format: CaptionFormat; error: Error };

/** Refuses a job without these captions (not completed, cancelled, or a format not listed). */
function captionsOf(
	ctx: IExecuteFunctions,
	i: number,
	job: Job,
	formats: CaptionFormat[],
): Record<CaptionFormat, string> {
	if (job.status !== 'completed' || !job.captions) {
		const why =
			job.status === 'cancelled'
				? `was cancelled (${job.cancellation?.reason ?? 'no reason given'}${job.cancellation?.message ? `: ${job.cancellation.message}` : ''}) and has no captions`
				: `is ${job.status}${job.progress === null ? '' : ` (${job.progress}% done)`}; captions exist once it is completed`;
		throw new NodeOperationError(ctx.getNode(), `Job ${job.id} ${why}`, {
			itemIndex: i,
			description:
				job.status === 'cancelled'
					? 'A cancelled job is refunded. Fix the cause (e.g. the media or its language) and order again.'
					: 'Wait for the job first: Job → Create with Wait for Completion, or a Captioning Trigger that starts the workflow when the job completes.',
		});
	}
	const captions = job.captions;
	const missing = formats.find((format) => !captions[format]);
	if (missing) {
		throw new NodeOperationError(ctx.getNode(), `Job ${job.id} has no ${missing} captions`, {
			itemIndex: i,
			description: `The service listed: ${Object.keys(captions).join(', ')}.`,
		});
	}
	return captions;
}

/** The downloaded formats' text for the item's JSON, each cut at the limit (`caption_truncated` names them). */
function captionText(
	ctx: IExecuteFunctions,
	i: number,
	job: Job,
	formats: CaptionFormat[],
	files: Map<CaptionFormat, Download>,
): IDataObject {
	const json: IDataObject = {};
	const text: IDataObject = {};
	const truncated: string[] = [];
	for (const format of formats) {
		const file = files.get(format);
		const kind = CAPTION_FORMATS[format].json;
		if (!file || kind === 'file') continue;
		if (kind === 'segments') {
			const segments = segmentsOf(ctx, i, job, file.data);
			Object.assign(json, segments.json);
			if (segments.truncated) truncated.push(format);
			continue;
		}
		const cut = bounded(file.data.toString('utf8'));
		text[format] = cut.text;
		if (cut.truncated) truncated.push(format);
	}
	if (Object.keys(text).length > 0) json.caption_text = text;
	if (truncated.length > 0) json.caption_truncated = truncated;
	return json;
}

/**
 * Downloads the chosen formats of a completed job: as binary fields, as text in the JSON, or both
 * (see CaptionSettings); refuses a job without captions. A download that fails throws, unless
 * `partial`: then the formats that came are output, and those that did not are listed in `failed`.
 */
export async function captionOutputs(
	ctx: IExecuteFunctions,
	i: number,
	job: Job,
	{ formats, as, field }: CaptionSettings,
	partial = false,
): Promise<{ binary?: IBinaryKeyData; json: IDataObject; failed: CaptionFailure[] }> {
	const captions = captionsOf(ctx, i, job, formats);
	// The formats download together, within the run's Concurrency and the key's rate limits.
	const downloads = await Promise.allSettled(
		formats.map(
			async (format) =>
				await downloadFile(ctx, captions[format], `The ${format.toUpperCase()} captions`, i),
		),
	);
	const failed: CaptionFailure[] = [];
	const files = new Map<CaptionFormat, Download>();
	downloads.forEach((result, n) => {
		if (result.status === 'fulfilled') files.set(formats[n], result.value);
		else failed.push({ format: formats[n], error: result.reason as Error });
	});
	if (failed.length > 0 && !partial) throw failed[0].error;
	const json = as === 'binary' ? {} : captionText(ctx, i, job, formats, files);
	if (as === 'json' || files.size === 0) return { json, failed };
	const binary: IBinaryKeyData = {};
	for (const [format, file] of files) {
		const name = formats.length === 1 ? field : `${field}_${format}`;
		binary[name] = await ctx.helpers.prepareBinaryData(
			file.data,
			captionFileName(job, format),
			CAPTION_FORMATS[format].mimeType,
		);
	}
	return { binary, json, failed };
}
