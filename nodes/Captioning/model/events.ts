// The service's events (interface part 6) and the statuses they report: their shape, what is
// final, which webhook a job was ordered with, and the token a Captioning Trigger's URL carries.
// Imports nothing of the package.
import type { IDataObject } from 'n8n-workflow';
import { createHmac } from 'node:crypto';

import type { Job } from './types';

const EVENT_TYPES = ['job.completed', 'job.cancelled'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface CaptioningEvent {
	id: string;
	object: 'event';
	type: EventType;
	created_at: string;
	data: Job;
}

/** The status a job has when its event is sent, and the event a final status sends. */
export const STATUS_OF: Record<EventType, Job['status']> = {
	'job.completed': 'completed',
	'job.cancelled': 'cancelled',
};

/** The reason a body is not an Event of interface part 6, or undefined when it is one. */
export function eventProblem(body: unknown): string | undefined {
	if (typeof body !== 'object' || body === null || Array.isArray(body))
		return 'the body is not a JSON object';
	const e = body as IDataObject;
	if (typeof e.id !== 'string' || !/^evt_/.test(e.id))
		return 'id must be an event id starting with evt_';
	if (e.object !== 'event') return 'object must be "event"';
	if (!EVENT_TYPES.includes(e.type as EventType))
		return `type must be one of ${EVENT_TYPES.join(', ')}`;
	const data = e.data as IDataObject | null | undefined;
	if (data?.object !== 'job' || typeof data.id !== 'string' || data.id === '')
		return 'data must be the job (an object with object "job" and its id)';
	return undefined;
}

export const EVENT_OF_STATUS = Object.fromEntries(
	EVENT_TYPES.map((type) => [STATUS_OF[type], type]),
) as Partial<Record<Job['status'], EventType>>;

/** Completed or cancelled: a final job stays so. */
export const isFinal = (job: Job) => job.status === 'completed' || job.status === 'cancelled';

/**
 * A webhook's own address: the last two segments of a URL's path (the trigger's
 * `<webhook id>/captioning`, a waiting execution's `<execution id>/<node id>`). What stands before
 * them (host, n8n's endpoint name, a reverse proxy's prefix) may differ between the URL a job was
 * ordered with and the request n8n receives; these segments are what n8n routes by.
 */
function webhookOwnPath(url: string): string {
	if (!URL.canParse(url, 'https://invalid')) return '';
	const { pathname } = new URL(url, 'https://invalid');
	return pathname.split('/').filter(Boolean).slice(-2).join('/');
}

/** Whether the job was ordered with the webhook at `url` (compared by their own addresses). */
export function orderedWith(job: Job, url: string): boolean {
	const orderedFor = webhookOwnPath(String(job.options?.webhook_url ?? ''));
	return orderedFor !== '' && orderedFor === webhookOwnPath(url);
}

/**
 * The token Job → Create adds to a Captioning Trigger's URL: derived from the workspace and the
 * trigger's own address, so that no API key, key rotation or read-only key changes it.
 */
export const workspaceToken = (workspaceId: string, webhookUrl: string) =>
	createHmac('sha256', workspaceId)
		.update(`captioning webhook token\n${webhookOwnPath(webhookUrl)}`)
		.digest('base64url')
		.slice(0, 32);
