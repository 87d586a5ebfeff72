// The service's events (interface part 6): their shape, and whether the job as read backs one up.
import type { IDataObject } from 'n8n-workflow';

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
