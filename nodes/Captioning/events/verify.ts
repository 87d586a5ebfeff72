// A job event at a webhook (the Captioning Trigger, On Webhook's resume): whether the job as read
// backs it up, and the webhook's answer.
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { CaptioningEvent } from '../model/events';
import { destinationProblem, verificationProblem } from '../model/events';
import type { Job } from '../model/types';

/** Answers a webhook request with a status and a JSON body, telling n8n not to answer again. */
export function respond(
	ctx: IWebhookFunctions,
	status: number,
	body: IDataObject,
): IWebhookResponseData {
	ctx.getResponseObject().status(status).json(body);
	return { noWebhookResponse: true };
}

export type EventRead = { job: Job } | { status: number; error: string };

/**
 * A read of the event's job as the trigger answers it: a job outside this workspace is refused
 * (403), a failure to read it is a 500, so the service may retry.
 */
export function eventRead(result: Job | Error): EventRead {
	if (!(result instanceof Error)) return { job: result };
	if (result instanceof NodeApiError && result.httpCode === '404') {
		return { status: 403, error: 'Event refused: its job is not in this workspace.' };
	}
	return { status: 500, error: `The job could not be read: ${result.message}` };
}

/**
 * Whether the job as read backs the event up. The service does not sign events, so this is what
 * makes one trustworthy: the job must be in this workspace (else 403), have the status the event
 * claims (else 409), and, unless `statusOnly`, have been ordered with the URL this request came to
 * (else 403: another workflow's job, or one ordered in the dashboard).
 */
export function backsUp(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	read: EventRead,
	statusOnly = false,
): EventRead {
	if ('error' in read) return read;
	const { job } = read;
	const mismatch = verificationProblem(event, job);
	if (mismatch) return { status: 409, error: `Event refused: ${mismatch}.` };
	const elsewhere = statusOnly
		? undefined
		: destinationProblem(job, ctx.getRequestObject().originalUrl);
	return elsewhere ? { status: 403, error: `Event refused: ${elsewhere}.` } : { job };
}
