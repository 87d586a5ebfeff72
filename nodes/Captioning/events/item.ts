// The item a job event starts a workflow with (both triggers): the job as read, what the event said
// of it, and with Attach Captions its files or text, downloaded inside the execution.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import type { CaptionSettings } from '../captions';
import { captionOutputs, captionSettings } from '../captions';
import type { EventType } from '../model/events';
import type { Job } from '../model/types';
import { DEFAULT_CONCURRENCY, runConcurrency, runLimit } from '../transport/limits';
import { hideSecrets } from '../transport/secrets';

/** Attach Captions as set on a trigger, checked before any download; undefined when it is off. */
export function attachSettings(ctx: IExecuteFunctions): CaptionSettings | undefined {
	return ctx.getNodeParameter('attachCaptions', 0, false) ? captionSettings(ctx, 0) : undefined;
}

/** The item a job event starts the workflow with: the job, what the event said of it, and whether it was read from the API. */
export function jobEventItem(
	job: Job,
	event: { id: string | null; type: EventType; createdAt: string | null; verified: boolean },
): INodeExecutionData {
	const json: IDataObject = {
		...structuredClone(job as unknown as IDataObject),
		event_id: event.id,
		event_type: event.type,
		event_created_at: event.createdAt,
		verified: event.verified,
	};
	// A posted body (Verify Events off) is not read through the transport: its secrets are hidden here.
	hideSecrets(json);
	return { json };
}

/**
 * The trigger's items with the captions of each completed job (Attach Captions), downloaded in the
 * execution: the default Concurrency of downloads at once, the first items first, with every
 * other request of the key under its rate limits, retried, and again on the execution's Retry. A download that finally fails does not fail the execution: the item carries
 * `captions_error` naming the formats and the cause (the event itself is not lost).
 */
export async function withCaptions(
	ctx: IExecuteFunctions,
	items: INodeExecutionData[],
	settings: CaptionSettings,
): Promise<INodeExecutionData[]> {
	runConcurrency.set(ctx, runLimit(ctx, DEFAULT_CONCURRENCY));
	return await Promise.all(
		items.map(async (input, i) => {
			const item: INodeExecutionData = { ...input, json: { ...input.json } };
			if (item.json.event_type !== 'job.completed') return item;
			let failed: Array<{ format: string; error: Error }>;
			try {
				const outputs = await captionOutputs(ctx, i, input.json as unknown as Job, settings, true);
				Object.assign(item.json, outputs.json);
				if (outputs.binary) item.binary = outputs.binary;
				failed = outputs.failed;
			} catch (error) {
				failed = [{ format: settings.formats.join(', '), error: error as Error }];
			}
			if (failed.length === 0) return item;
			// Which formats could not be downloaded, why, and what still can.
			const causes = failed.map(({ format, error }) => `${format.toUpperCase()}: ${error.message}`);
			item.json.captions_error = `The captions could not be downloaded (${causes.join('; ')}). The job is completed: Job → Get Captions can fetch them later.`;
			return item;
		}),
	);
}
