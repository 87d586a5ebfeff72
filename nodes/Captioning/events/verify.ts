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

/** How long a sender asked to come back should wait (Retry-After, seconds). */
export const COME_BACK_AFTER_S = 10;

/**
 * Asks the sender to deliver the event again later (503 with Retry-After): its outcome cannot be
 * known yet, so it is neither started nor refused for good.
 */
export function comeBack(ctx: IWebhookFunctions, error: string): IWebhookResponseData {
	ctx.getResponseObject().status(503).set('Retry-After', String(COME_BACK_AFTER_S)).json({ error });
	return { noWebhookResponse: true };
}

/** A refusal or a "come back later" (503), as `backsUp` decided it. */
export type Refusal = { status: number; error: string };

/** Answers a refusal: a 503 asks the sender to come back (Retry-After); others are final. */
export function answerRefusal(ctx: IWebhookFunctions, refusal: Refusal): IWebhookResponseData {
	return refusal.status === 503
		? comeBack(ctx, refusal.error)
		: respond(ctx, refusal.status, { error: refusal.error });
}

/**
 * Whether the job as read (or the error reading it) backs the event up. The service does not sign events, so this is what
 * makes one trustworthy: the job must be in this workspace (else 403), have the status the event
 * claims (else 503: the status may not show yet, so the sender is asked to come back), and, unless
 * `statusOnly`, have been ordered with the URL this request came to (else 403: another workflow's
 * job, or one ordered in the dashboard).
 */
export function backsUp(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	job: Job | Error,
	statusOnly = false,
): { job: Job } | Refusal {
	if (job instanceof NodeApiError && job.httpCode === '404')
		return { status: 403, error: 'Event refused: its job is not in this workspace.' };
	if (job instanceof Error)
		return {
			status: 503,
			error: `The job could not be read (${job.message}); deliver the event again later.`,
		};
	const mismatch = verificationProblem(event, job);
	if (mismatch)
		return { status: 503, error: `Not yet: ${mismatch}; deliver the event again later.` };
	const elsewhere = statusOnly
		? undefined
		: destinationProblem(job, ctx.getRequestObject().originalUrl);
	return elsewhere ? { status: 403, error: `Event refused: ${elsewhere}.` } : { job };
}
