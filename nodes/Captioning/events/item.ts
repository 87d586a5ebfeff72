// What the two triggers share: the Events choice, Attach Captions, and the item a job event becomes.
import type { IDataObject, INodeExecutionData, INodeProperties, IPollFunctions, IWebhookFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { CaptionsAs } from './captions';
import { captionOutputs, captionsAsField, captionsAsFor, captionsAsProblem, formatsField } from './captions';
import type { EventType } from './events';
import type { CaptionFormat, Job } from './types';

export const eventsField: INodeProperties = {
	displayName: 'Events',
	name: 'events',
	type: 'multiOptions',
	required: true,
	options: [
		{ name: 'Job Cancelled', value: 'job.cancelled', description: 'The job was cancelled (unsupported language or media, deleted…) and refunded' },
		{ name: 'Job Completed', value: 'job.completed', description: 'The captions are ready' },
	],
	default: ['job.completed', 'job.cancelled'],
	description: 'The events that start the workflow; others are acknowledged and ignored',
};

export const attachCaptionsFields: INodeProperties[] = [
	{
		displayName: 'Attach Captions',
		name: 'attachCaptions',
		type: 'boolean',
		default: false,
		description: 'Whether to download the captions of a completed job and output them as binary files, ready for a storage node',
	},
	{ ...formatsField, displayOptions: { show: { attachCaptions: [true] } } },
	{ ...captionsAsField, displayOptions: { show: { attachCaptions: [true] } } },
	{
		displayName: 'Put Output File in Field',
		name: 'binaryPropertyName',
		type: 'string',
		default: 'data',
		required: true,
		displayOptions: { show: { attachCaptions: [true], captionsAs: ['binary', 'both'] } },
		hint: 'The name of the output binary field to put the file in',
		description: 'With several formats, each file goes into this name followed by _ and the format, e.g. data_srt',
	},
];

export const EVENT_OF_STATUS: Partial<Record<Job['status'], EventType>> = { completed: 'job.completed', cancelled: 'job.cancelled' };

/** Attach Captions as set on a trigger, checked before any request; undefined when it is off. */
export function attachSettings(ctx: IWebhookFunctions | IPollFunctions): { formats: CaptionFormat[]; as: CaptionsAs; field: string } | undefined {
	if (!(ctx.getNodeParameter('attachCaptions', false) as boolean)) return undefined;
	const formats = ctx.getNodeParameter('formats', []) as CaptionFormat[];
	const as = captionsAsFor(ctx, 0);
	const problem = captionsAsProblem(formats, as);
	if (problem) throw new NodeOperationError(ctx.getNode(), `Attach Captions: ${problem}`);
	return { formats, as, field: as === 'json' ? 'data' : (ctx.getNodeParameter('binaryPropertyName', 'data') as string) };
}

/** What `captions_error` says of formats that could not be downloaded: which, why, and what still can. */
function captionsError(failed: Array<{ format: string; error: Error }>): string {
	const causes = failed.map(({ format, error }) => `${format.toUpperCase()}: ${error.message}`).join('; ');
	return `The captions could not be downloaded (${causes}). The job is completed: Job → Get Captions can fetch them later.`;
}

export type AttachSettings = ReturnType<typeof attachSettings>;

/**
 * The item a job event starts the workflow with: the job, what the event said of it, and whether
 * it was read from the API. With Attach Captions (`attach`, as read before the first request), a
 * completed job's files come along. `settle` (the webhook trigger, which has answered the service
 * already): a download that fails does not fail the item, which comes with `captions_error`
 * instead, so that the event is not lost.
 */
export async function jobEventItem(
	ctx: IWebhookFunctions | IPollFunctions,
	job: Job,
	event: { id: string | null; type: EventType; createdAt: string | null; verified: boolean },
	{ attach, settle = false }: { attach: AttachSettings; settle?: boolean },
): Promise<INodeExecutionData> {
	const item: INodeExecutionData = {
		json: { ...(job as unknown as IDataObject), event_id: event.id, event_type: event.type, event_created_at: event.createdAt, verified: event.verified },
	};
	if (!attach || event.type !== 'job.completed') return item;
	if (!settle) {
		const { binary, json } = await captionOutputs(ctx, 0, job, attach.formats, attach.field, attach.as);
		Object.assign(item.json, json);
		if (binary) item.binary = binary;
		return item;
	}
	try {
		const { binary, json, failed } = await captionOutputs(ctx, 0, job, attach.formats, attach.field, attach.as, true);
		Object.assign(item.json, json);
		if (binary) item.binary = binary;
		if (failed.length > 0) item.json.captions_error = captionsError(failed);
	} catch (error) {
		item.json.captions_error = captionsError([{ format: attach.formats.join(', '), error: error as Error }]);
	}
	return item;
}
