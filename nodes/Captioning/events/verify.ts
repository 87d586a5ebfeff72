// A job event at a webhook (the Captioning Trigger, On Webhook's resume): the webhook's own answer,
// and whether the job as read backs the event up.
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import type { CaptioningEvent } from '../model/events';
import { destinationProblem, verificationProblem } from '../model/events';
import type { Job } from '../model/types';
import { notInWorkspace } from '../transport/jobs';

/** Answers a webhook request with a status and a JSON body, telling n8n not to answer again. */
export function respond(
	ctx: IWebhookFunctions,
	status: number,
	body: IDataObject,
): IWebhookResponseData {
	ctx.getResponseObject().status(status).json(body);
	return { noWebhookResponse: true };
}

/**
 * Whether the job as read (or the error reading it) backs the event up: the job must be in this
 * workspace (else 403), have the status the event claims (else 503: the status may not show yet)
 * and have been ordered with the URL this request came to (else 403: another workflow's job, or
 * one ordered in the dashboard).
 */
export function backsUp(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	job: Job | Error,
): { job: Job } | { status: number; error: string } {
	if (notInWorkspace(job)) return { status: 403, error: 'its job is not in this workspace' };
	if (job instanceof Error)
		return { status: 503, error: `the job could not be read (${job.message})` };
	const mismatch = verificationProblem(event, job);
	if (mismatch) return { status: 503, error: mismatch };
	const elsewhere = destinationProblem(job, ctx.getRequestObject().originalUrl);
	return elsewhere ? { status: 403, error: elsewhere } : { job };
}
