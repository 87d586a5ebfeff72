// Which events this trigger has handled: each job's news starts the workflow once while n8n runs.
//
// An event is handled once an execution of it exists: n8n answered a delivery of it 2xx (2.x only
// after it stored the execution, 1.x just before) or an execution of it ran this trigger's
// execute(). Until n8n answers, the delivery that was handed to n8n is the event's try, and n8n's
// answer stays on that delivery's response object, also after the sender has gone: a copy of the
// event (the same id, or the same job's news under another id) reads it there. Answered 2xx: the
// copy is a duplicate (200, started: false). Answered with an error: nothing was stored, the copy
// takes over. Not answered yet (n8n waits for a concurrency slot, or is busy storing): the copy is
// asked to come back (503 with Retry-After). No timer and no closed connection decides a try; the
// try's own execution runs once n8n stores it (at the latest when a slot frees, or at n8n's next
// start, which runs what it stored and did not start).
//
// Handled events are remembered for the service's redelivery window (`windowMs`), at most
// `maxInProcess` per trigger in this process, and the newest `maxSaved` in the node's static data,
// written by each execution from this process's memory (n8n saves static data when an execution
// ends, the whole column, last writer wins: every write holds what the process knew). A
// redelivery past the window or those bounds starts the workflow again: better twice than never.
// Events and news are known by a digest (`digestOf`), so the saved lines stay small.
import type { IDataObject, IExecuteFunctions, IWebhookFunctions } from 'n8n-workflow';
import { createHash, timingSafeEqual } from 'node:crypto';

import type { CaptioningEvent } from '../Captioning/model/events';

export const eventMemory = {
	/** How long the service may deliver an event again: not in the interface, assumed 3 days. */
	windowMs: 3 * 24 * 3600 * 1000,
	maxInProcess: 20000,
	maxSaved: 1000,
};

/** Compares the token in constant time (over digests, so the length leaks nothing either). */
export function tokenMatches(given: unknown, expected: string): boolean {
	const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
	return typeof given === 'string' && timingSafeEqual(digest(given), digest(expected));
}

/**
 * 48 bits of SHA-256: 1,000 saved events are about 29 KB of static data, and a new event matches
 * one of them by chance about once in 10^11.
 */
const digestOf = (s: string) =>
	createHash('sha256').update(s, 'utf8').digest('base64url').slice(0, 8);

interface Handled {
	/** The digest of `<job id> <event type>`: the news the event brings. */
	news: string;
	at: number;
	/** Whether an execution of it ran execute() in this process. */
	ran: boolean;
	/** The event's id, when this process saw it (static data keeps the digest only). */
	id?: string;
}

/** What a try's delivery shows of n8n's answer (the response object n8n answers on). */
interface Answer {
	readonly writableEnded: boolean;
	readonly statusCode: number;
}

interface Try {
	news: string;
	answer: Answer;
}

const newsOf = (jobId: unknown, type: unknown) => digestOf(`${String(jobId)} ${String(type)}`);

/**
 * The handled events (by the digest of their id) and the tries under way (by id) of one trigger (a
 * workflow's node) in this process.
 */
class TriggerMemory {
	readonly handled = new Map<string, Handled>();
	private readonly handledNews = new Map<string, string>();
	readonly tries = new Map<string, Try>();
	lastUsed = Date.now();

	add(key: string, entry: Handled): void {
		const known = this.handled.get(key);
		if (known) {
			known.ran ||= entry.ran;
			known.id ??= entry.id;
			return;
		}
		this.handled.set(key, entry);
		this.handledNews.set(entry.news, key);
		this.trim(Date.now());
	}

	/** The event that brought this news before, if any. */
	eventWithNews(news: string): Handled | undefined {
		const key = this.handledNews.get(news);
		return key === undefined ? undefined : this.handled.get(key);
	}

	/** Drops what is past the window or over the bound (the map is in the order events were handled). */
	trim(now: number): void {
		for (const [key, entry] of this.handled) {
			if (now - entry.at <= eventMemory.windowMs && this.handled.size <= eventMemory.maxInProcess)
				break;
			this.handled.delete(key);
			if (this.handledNews.get(entry.news) === key) this.handledNews.delete(entry.news);
		}
	}

	/** Reads n8n's answer on every try: answered 2xx, the event is handled; with an error, the try ends. */
	settleTries(): void {
		for (const [id, t] of this.tries) {
			if (!t.answer.writableEnded) continue;
			this.tries.delete(id);
			const { statusCode } = t.answer;
			if (statusCode >= 200 && statusCode < 300)
				this.add(digestOf(id), { news: t.news, at: Date.now(), ran: false, id });
		}
	}

	/** The try of this event or of its news, if one is under way. */
	tryOf(eventId: string, news: string): Try | undefined {
		return this.tries.get(eventId) ?? [...this.tries.values()].find((t) => t.news === news);
	}
}

/** Per workflow and node: every delivery to a trigger is handled in the process that serves it. */
const memories = new Map<string, TriggerMemory>();

const memoryKey = (workflowId: string | undefined, nodeId: string) =>
	`${workflowId ?? ''}:${nodeId}`;

function memoryOf(workflowId: string | undefined, nodeId: string): TriggerMemory {
	const now = Date.now();
	// Memories of triggers that received nothing for the whole window (deleted workflows among them) end.
	for (const [key, m] of memories)
		if (now - m.lastUsed > eventMemory.windowMs && m.tries.size === 0) memories.delete(key);
	const key = memoryKey(workflowId, nodeId);
	let memory = memories.get(key);
	if (!memory) memories.set(key, (memory = new TriggerMemory()));
	memory.lastUsed = now;
	memory.trim(now);
	return memory;
}

/** The static data lines: `<event id's digest> <news's digest> <handled at, ms in base 36>`. */
type Saved = { handledEvents?: string[] };

const parse = (line: string): [string, Handled] | undefined => {
	const [key, news, at] = line.split(' ');
	const ms = parseInt(at, 36);
	return key && news && Number.isFinite(ms) ? [key, { news, at: ms, ran: false }] : undefined;
};

/** The memory of this trigger, with what the node's static data remembers (after a restart, or another process's). */
function triggerMemory(ctx: IWebhookFunctions | IExecuteFunctions): TriggerMemory {
	const memory = memoryOf(ctx.getWorkflow().id, ctx.getNode().id);
	const saved = ctx.getWorkflowStaticData('node') as Saved;
	const now = Date.now();
	for (const line of saved.handledEvents ?? []) {
		const entry = parse(line);
		if (entry && now - entry[1].at <= eventMemory.windowMs) memory.add(...entry);
	}
	memory.settleTries();
	return memory;
}

export type Seen =
	/** New: this delivery is the event's try (claimed). */
	| { kind: 'new' }
	/** The event, or its news under another id (`earlier`, when this process saw it), has an execution. */
	| { kind: 'handled'; sameEvent: boolean; earlier?: string }
	/** A delivery of it (or of its news) is with n8n, not answered yet. */
	| { kind: 'underWay' };

/**
 * What this delivery of the event is. A new one is claimed in the same synchronous step, so that
 * two deliveries of one event that arrive together are never both new.
 */
export function claimEvent(ctx: IWebhookFunctions, event: CaptioningEvent): Seen {
	const memory = triggerMemory(ctx);
	if (memory.handled.has(digestOf(event.id))) return { kind: 'handled', sameEvent: true };
	const news = newsOf(event.data.id, event.type);
	const before = memory.eventWithNews(news);
	if (before) return { kind: 'handled', sameEvent: false, earlier: before.id };
	if (memory.tryOf(event.id, news)) return { kind: 'underWay' };
	memory.tries.set(event.id, { news, answer: ctx.getResponseObject() });
	return { kind: 'new' };
}

/**
 * The execution of these events runs execute(): they are handled, in this process's memory and in
 * the static data n8n saves when the execution ends. Returns the events an earlier execution
 * already ran in this process (a stored execution n8n started at its restart, beside a redelivery
 * of the same event): a production execution leaves those out. Retries and test runs are the
 * user's own and always run.
 */
export function eventsStarted(ctx: IExecuteFunctions, items: IDataObject[]): Set<string> {
	const memory = triggerMemory(ctx);
	const now = Date.now();
	const ranBefore = new Set<string>();
	for (const json of items) {
		const id = json.event_id;
		if (typeof id !== 'string') continue;
		if (memory.handled.get(digestOf(id))?.ran) ranBefore.add(id);
		memory.tries.delete(id);
		memory.add(digestOf(id), { news: newsOf(json.id, json.event_type), at: now, ran: true, id });
	}
	const saved = ctx.getWorkflowStaticData('node') as Saved;
	saved.handledEvents = [...memory.handled]
		.slice(-eventMemory.maxSaved)
		.map(([key, entry]) => `${key} ${entry.news} ${entry.at.toString(36)}`);
	return ctx.getMode() === 'webhook' ? ranBefore : new Set();
}
