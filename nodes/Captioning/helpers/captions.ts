// Caption files: the formats a user picks, and downloading a completed job's captions as n8n
// binary files (Job → Get Captions and both triggers' Attach Captions).
import type { IBinaryKeyData, IExecuteFunctions, INodeProperties, IPollFunctions, IWebhookFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { getBaseUrl } from '../transport';
import { downloadFile } from '../transport/files';
import type { CaptionFormat, Job } from './types';

export const CAPTION_MIME_TYPES: Record<CaptionFormat, string> = {
	srt: 'application/x-subrip',
	vtt: 'text/vtt',
	txt: 'text/plain',
	docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
	json: 'application/json',
};

export const formatsField: INodeProperties = {
	displayName: 'Formats',
	name: 'formats',
	type: 'multiOptions',
	options: [
		{ name: 'DOCX (Word Transcript)', value: 'docx' },
		{ name: 'JSON (Segments With Speakers)', value: 'json' },
		{ name: 'SRT (Subtitles)', value: 'srt' },
		{ name: 'TXT (Plain Transcript)', value: 'txt' },
		{ name: 'VTT (Web Subtitles)', value: 'vtt' },
	],
	default: ['srt'],
	required: true,
	description: 'The caption files to download. With one format the file goes into the output field; with several, each into the field name followed by _ and the format (e.g. data_srt).',
};

/** A file name from the job title: what the service uses as the download name, made safe for disks. */
export function captionFileName(job: Job, format: CaptionFormat): string {
	// eslint-disable-next-line no-control-regex
	const base = (job.title || job.id).replace(/[\\/:*?"<>|\u0000-\u001f]+/g, '_').replace(/^[.\s]+|[.\s]+$/g, '').slice(0, 200);
	return `${base || job.id}.${format}`;
}

/** Downloads the chosen formats of a completed job as binary fields; refuses a job without captions. */
export async function captionBinaries(
	ctx: IExecuteFunctions | IWebhookFunctions | IPollFunctions,
	i: number,
	job: Job,
	formats: CaptionFormat[],
	field: string,
): Promise<IBinaryKeyData> {
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
	const baseUrl = await getBaseUrl(ctx, i);
	const captions = job.captions;
	const missing = formats.find((format) => !captions[format]);
	if (missing) {
		throw new NodeOperationError(ctx.getNode(), `Job ${job.id} has no ${missing} captions`, { itemIndex: i, description: `The service listed: ${Object.keys(captions).join(', ')}.` });
	}
	// The formats download together, within the node run's pacing (Batching → Concurrency).
	const files = await Promise.all(formats.map(async (format) => await downloadFile(ctx, captions[format], baseUrl, i)));
	const binary: IBinaryKeyData = {};
	for (const [n, format] of formats.entries()) {
		const name = formats.length === 1 ? field : `${field}_${format}`;
		binary[name] = await ctx.helpers.prepareBinaryData(files[n].data, captionFileName(job, format), CAPTION_MIME_TYPES[format]);
	}
	return binary;
}
