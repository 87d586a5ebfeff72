// Which events this trigger has handled: each job's event starts the workflow once, and an event is
// refused only when it was handled. An event counts as handled once n8n answered its delivery 2xx
// (n8n 2.x answers only once the execution is stored) or its execution ran this trigger's
// execute(). Until then it is being tried: a second delivery of it waits for that outcome, and
// takes over if the try failed (n8n answered an error, or nothing ran within `settleMs`).
//
// Handled events are remembered for the service's redelivery window (`windowMs`), at most
// `maxInProcess` per trigger in this process, and the newest `maxSaved` also in the node's static
// data, written by the execution (n8n saves it when the execution ends, so only events that have
// an execution are kept across a restart). A redelivery past the window or those bounds starts the
// workflow again: better twice than never.
import type { IDataObject, IExecuteFunctions, IWebhookFunctions } from 'n8n-workflow';
import { createHash, timingSafeEqual } from 'node:crypto';

import type { CaptioningEvent } from '../Captioning/model/events';

export const eventMemory = {
	/** How long the service may deliver an event again: not in the interface, assumed 3 days. */
	windowMs: 3 * 24 * 3600 * 1000,
	maxInProcess: 20000,
	maxSaved: 1000,
	/** A try whose outcome is not known this long after it was accepted (no answer, no run) failed. */
	settleMs: 60000,
};

/** Compares the token in constant time (over digests, so the length leaks nothing either). */
export function tokenMatches(given: unknown, expected: string): boolean {
	const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
	return typeof given === 'string' && timingSafeEqual(digest(given), digest(expected));
}

interface Handled {
	/** `<job id> <event type>`: the news the event brings. */
	news: string;
	at: number;
}

interface Try {
	news: string;
	since: number;
	/** Whether the try ended with the event handled; resolves once known. */
	outcome: Promise<boolean>;
	settle: (handled: boolean) => void;
}

const newsOf = (event: CaptioningEvent) => `${event.data.id} ${event.type}`;

/** The handled events and the tries under way of one trigger (a workflow's node) in this process. */
class TriggerMemory {
	readonly handled = new Map<string, Handled>();
	private readonly handledNews = new Map<string, string>();
	readonly tries = new Map<string, Try>();
	lastUsed = Date.now();

	add(eventId: string, entry: Handled): void {
		if (this.handled.has(eventId)) return;
		this.handled.set(eventId, entry);
		this.handledNews.set(entry.news, eventId);
		this.trim(Date.now());
	}

	/** The event id that brought this news before, if any. */
	eventWithNews(news: string): string | undefined {
		return this.handledNews.get(news);
	}

	/** Drops what is past the window or over the bound (the map is in the order events were handled). */
	trim(now: number): void {
		for (const [id, entry] of this.handled) {
			if (now - entry.at <= eventMemory.windowMs && this.handled.size <= eventMemory.maxInProcess)
				break;
			this.handled.delete(id);
			if (this.handledNews.get(entry.news) === id) this.handledNews.delete(entry.news);
		}
		for (const [id, t] of this.tries)
			if (now - t.since > eventMemory.settleMs) this.endTry(id, false);
	}

	endTry(eventId: string, handled: boolean): void {
		const t = this.tries.get(eventId);
		if (!t) return;
		this.tries.delete(eventId);
		if (handled) this.add(eventId, { news: t.news, at: Date.now() });
		t.settle(handled);
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

/** Forgets a trigger's memory in this process (its workflow was deactivated). */
export function forgetTrigger(workflowId: string | undefined, nodeId: string): void {
	memories.delete(memoryKey(workflowId, nodeId));
}

/** The static data lines: `<event id> <job id> <event type> <handled at, ms in base 36>`. */
type Saved = { handledEvents?: string[] };

const parse = (line: string): [string, Handled] | undefined => {
	const [id, job, type, at] = line.split(' ');
	const ms = parseInt(at, 36);
	return id && job && type && Number.isFinite(ms)
		? [id, { news: `${job} ${type}`, at: ms }]
		: undefined;
};

/** The memory of this trigger, with what the node's static data remembers (after a restart). */
function triggerMemory(ctx: IWebhookFunctions): TriggerMemory {
	const memory = memoryOf(ctx.getWorkflow().id, ctx.getNode().id);
	const saved = ctx.getWorkflowStaticData('node') as Saved;
	const now = Date.now();
	for (const line of saved.handledEvents ?? []) {
		const entry = parse(line);
		if (entry && now - entry[1].at <= eventMemory.windowMs) memory.add(...entry);
	}
	return memory;
}

export type Seen =
	/** New: this delivery tries it (`claim` taken). */
	| { kind: 'new' }
	/** This very event was handled: the service delivered it again. */
	| { kind: 'handled' }
	/** The job's news came before under another event id. */
	| { kind: 'replay'; eventId: string }
	/** Another delivery of it (or of its news) is being tried: its outcome says what this one is. */
	| { kind: 'underWay'; outcome: Promise<boolean> };

/**
 * What this delivery of the event is. A new one is claimed in the same synchronous step, so that
 * two deliveries of one event that arrive together are never both new.
 */
export function claimEvent(ctx: IWebhookFunctions, event: CaptioningEvent): Seen {
	const memory = triggerMemory(ctx);
	if (memory.handled.has(event.id)) return { kind: 'handled' };
	const news = newsOf(event);
	const before = memory.eventWithNews(news);
	if (before !== undefined) return { kind: 'replay', eventId: before };
	// This event, or the same news under another id, is being tried: its outcome decides.
	const underWay =
		memory.tries.get(event.id) ?? [...memory.tries.values()].find((t) => t.news === news);
	if (underWay) return { kind: 'underWay', outcome: underWay.outcome };
	let settle!: (handled: boolean) => void;
	const outcome = new Promise<boolean>((resolve) => (settle = resolve));
	memory.tries.set(event.id, { news, since: Date.now(), outcome, settle });
	return { kind: 'new' };
}

/** The try of this delivery ended without starting the workflow (refused, or failed): a redelivery is new. */
export function releaseEvent(ctx: IWebhookFunctions, event: CaptioningEvent): void {
	memoryOf(ctx.getWorkflow().id, ctx.getNode().id).endTry(event.id, false);
}

/**
 * The event was accepted and its execution is n8n's to start. It counts as handled once n8n
 * answered the delivery 2xx (2.x answers only after it stored the execution) or the execution ran;
 * an error answer gives the claim back.
 */
export function acceptEvent(ctx: IWebhookFunctions, event: CaptioningEvent): void {
	const memory = memoryOf(ctx.getWorkflow().id, ctx.getNode().id);
	const response = ctx.getResponseObject();
	response.once('finish', () =>
		memory.endTry(event.id, response.statusCode >= 200 && response.statusCode < 300),
	);
}

/**
 * The execution of these events runs: they are handled, in this process's memory (where the
 * delivery came, in regular mode) and in the static data n8n saves when the execution ends.
 */
export function eventsStarted(ctx: IExecuteFunctions, items: IDataObject[]): void {
	const memory = memories.get(memoryKey(ctx.getWorkflow().id, ctx.getNode().id));
	const saved = ctx.getWorkflowStaticData('node') as Saved;
	const now = Date.now();
	const lines = (saved.handledEvents ?? []).filter((line) => {
		const entry = parse(line);
		return entry !== undefined && now - entry[1].at <= eventMemory.windowMs;
	});
	for (const json of items) {
		const id = json.event_id;
		if (typeof id !== 'string') continue;
		memory?.endTry(id, true);
		lines.push(`${id} ${String(json.id)} ${String(json.event_type)} ${now.toString(36)}`);
	}
	saved.handledEvents = lines.slice(-eventMemory.maxSaved);
}
