// The item a job event starts a workflow with (both triggers): the job as read, what the event said
// of it, and with Attach Captions its files or text.
import type { IDataObject, INodeExecutionData, IPollFunctions, IWebhookFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { CaptionsAs } from '../captions';
import { captionOutputs, captionsAsFor, captionsAsProblem } from '../captions';
import type { EventType } from '../model/events';
import type { CaptionFormat, Job } from '../model/types';

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
