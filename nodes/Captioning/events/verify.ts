// The service's events (interface part 6): their shape, and whether the job as read backs one up.
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { apiRequest, segment } from '../transport';
import type { Job } from './types';

export const EVENT_TYPES = ['job.completed', 'job.cancelled'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface CaptioningEvent {
	id: string;
	object: 'event';
	type: EventType;
	created_at: string;
	data: Job;
}

const STATUS_OF: Record<EventType, Job['status']> = { 'job.completed': 'completed', 'job.cancelled': 'cancelled' };

/** The reason a body is not an Event of interface part 6, or undefined when it is one. */
export function eventProblem(body: unknown): string | undefined {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is not a JSON object';
	const e = body as IDataObject;
	if (typeof e.id !== 'string' || !/^evt_/.test(e.id)) return 'id must be an event id starting with evt_';
	if (e.object !== 'event') return 'object must be "event"';
	if (!EVENT_TYPES.includes(e.type as EventType)) return `type must be one of ${EVENT_TYPES.join(', ')}`;
	const data = e.data as IDataObject | undefined;
	if (typeof data !== 'object' || data === null || data.object !== 'job' || typeof data.id !== 'string' || data.id === '') {
		return 'data must be the job (an object with object "job" and its id)';
	}
	return undefined;
}

/** Why the job as read does not back the event up, or undefined when it does. */
export function verificationProblem(event: CaptioningEvent, job: Job): string | undefined {
	if (job.status !== STATUS_OF[event.type]) {
		return `the event says ${event.type} but the job's status is ${job.status}`;
	}
	return undefined;
}

/**
 * A webhook's own address: the last two segments of a URL's path (the trigger's
 * `<webhook id>/captioning`, a waiting execution's `<execution id>/<node id>`). What stands before
 * them (host, n8n's endpoint name, a reverse proxy's prefix) may differ between the URL a job was
 * ordered with and the request n8n receives; these segments are what n8n routes by.
 */
export function webhookOwnPath(url: string): string {
	let pathname: string;
	try {
		pathname = new URL(url, 'https://invalid').pathname;
	} catch {
		return '';
	}
	return pathname.split('/').filter(Boolean).slice(-2).join('/');
}

/** Why the job was not meant for the webhook called at `calledUrl`, or undefined when it was. */
export function destinationProblem(job: Job, calledUrl: string): string | undefined {
	const orderedFor = webhookOwnPath(String(job.options?.webhook_url ?? ''));
	if (orderedFor && orderedFor === webhookOwnPath(calledUrl)) return undefined;
	return orderedFor
		? `job ${job.id} was ordered with another Webhook URL, so its events are not for this workflow`
		: `job ${job.id} was ordered without a Webhook URL, so no event of it is for this workflow`;
}

/** Answers a webhook request with a status and a JSON body, telling n8n not to answer again. */
export function respond(ctx: IWebhookFunctions, status: number, body: IDataObject): IWebhookResponseData {
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
export function backsUp(ctx: IWebhookFunctions, event: CaptioningEvent, read: EventRead, statusOnly = false): EventRead {
	if ('error' in read) return read;
	const { job } = read;
	const mismatch = verificationProblem(event, job);
	if (mismatch) return { status: 409, error: `Event refused: ${mismatch}.` };
	const elsewhere = statusOnly ? undefined : destinationProblem(job, ctx.getRequestObject().originalUrl);
	return elsewhere ? { status: 403, error: `Event refused: ${elsewhere}.` } : { job };
}

/** Reads the event's job back with the node's credentials (one read) and checks it backs the event up. */
export async function readBackEvent(ctx: IWebhookFunctions, event: CaptioningEvent): Promise<EventRead> {
	let result: Job | Error;
	try {
		result = (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(event.data.id)}`, { urgency: 'answer' })).body;
	} catch (error) {
		result = error as Error;
	}
	return backsUp(ctx, event, eventRead(result));
}
