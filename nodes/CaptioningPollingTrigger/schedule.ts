// When a poll reports, and that polls of one node take turns.
//
// n8n starts a poll at every scheduled time, also while the previous poll of the workflow is still
// under way. Overlapping polls are slow (they compete for the key's reads) and, in n8n 2.41.1,
// harmful: the poll that ends first frees the workflow's expression isolate while the other still
// runs (CONTRIBUTING, "n8n's faults"). So a poll reports until shortly before the next one is due
// (its budget, from the schedule) and leaves the rest to it; and should one start while another
// still runs (a schedule with uneven times, the first poll after a restart), the running one is told
// to wrap up: it reports what it has at once, and the new one takes over when it has ended.
import type { IDataObject } from 'n8n-workflow';

import { pause } from '../Captioning/transport';

export const pollLimits = {
	/** A poll stops reporting this long before the next poll is due: the key stays busy, polls do not overlap. */
	marginMs: 1000,
	/** The least and the most a poll reports for (the most keeps one execution's items bounded). */
	minBudgetMs: 2000,
	maxBudgetMs: 5 * 60000,
	/** The interval assumed when neither the schedule nor earlier polls tell it. */
	defaultIntervalMs: 20000,
	/** How long a new poll waits for a running one to wrap up before it leaves the work to the next. */
	handoffWaitMs: 60000,
};

interface PollTime {
	mode?: string;
	value?: number;
	unit?: string;
	cronExpression?: string;
}

const MINUTE = 60000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A custom cron's fields, seconds first (a five-field cron fires at second 0). */
function cronFields(expression: string | undefined): string[] | undefined {
	const fields = String(expression ?? '').trim().split(/\s+/);
	if (fields.length === 5) fields.unshift('0');
	return fields.length === 6 ? fields : undefined;
}

/** How often one Poll Times entry fires, where that is plain from it. */
function periodOf(time: PollTime): number | undefined {
	switch (time.mode) {
		case 'everyMinute':
			return MINUTE;
		case 'everyHour':
			return HOUR;
		case 'everyX':
			return Number(time.value) * (time.unit === 'hours' ? HOUR : MINUTE) || undefined;
		case 'everyDay':
			return DAY;
		case 'everyWeek':
			return 7 * DAY;
		case 'everyMonth':
			return 28 * DAY;
		case 'custom': {
			const f = cronFields(time.cronExpression);
			if (!f || !/^\d+$/.test(f[0]) || f.slice(2).some((field) => field !== '*')) return undefined;
			if (f[1] === '*') return MINUTE;
			const step = /^\*\/(\d+)$/.exec(f[1]);
			return step ? Number(step[1]) * MINUTE : undefined;
		}
		default:
			return undefined;
	}
}

/**
 * The shortest time between two polls that Poll Times set, where it is plain from them: one entry,
 * or custom crons that each fire once a minute at a second of their own (n8n refuses an interval
 * under a minute, so several such entries are how a poll runs more often). n8n picks the second of
 * its own modes at random, so several of those say nothing of their spacing.
 */
export function scheduledIntervalMs(pollTimes: IDataObject | undefined): number | undefined {
	const times = ((pollTimes?.item as PollTime[] | undefined) ?? []).filter(Boolean);
	if (times.length === 1) return periodOf(times[0]);
	const seconds = times.map((time) => {
		const f = time.mode === 'custom' ? cronFields(time.cronExpression) : undefined;
		return f && /^\d+$/.test(f[0]) && f.slice(1).every((field) => field === '*') ? Number(f[0]) : undefined;
	});
	if (times.length < 2 || seconds.some((s) => s === undefined)) return undefined;
	const sorted = [...new Set(seconds as number[])].sort((a, b) => a - b);
	const gaps = sorted.map((s, n) => (n + 1 < sorted.length ? sorted[n + 1] : sorted[0] + 60) - s);
	return Math.min(...gaps) * 1000;
}

interface Turn {
	/** Set when a newer poll waits: report what you have now. */
	wrappingUp: boolean;
	ended: Promise<void>;
}

interface Turns {
	running?: Turn;
	waiting: boolean;
	/** When the latest polls started (ms), the newest last. */
	starts: number[];
}

/** Per active workflow and node: n8n hands all its polls the same static data object. */
const turnsOf = new WeakMap<object, Turns>();

const turnsFor = (key: object): Turns => {
	let turns = turnsOf.get(key);
	if (!turns) turnsOf.set(key, (turns = { waiting: false, starts: [] }));
	return turns;
};

/**
 * How long this poll reports: until shortly before the next is due. The interval comes from Poll
 * Times where they tell it, else from when the latest polls started, else the default.
 */
export function reportBudgetMs(key: object, pollTimes: IDataObject | undefined): number {
	const { starts } = turnsFor(key);
	const gaps = starts.slice(1).map((at, n) => at - starts[n]).filter((gap) => gap >= 1000);
	const interval = scheduledIntervalMs(pollTimes) ?? (gaps.length ? Math.min(...gaps) : pollLimits.defaultIntervalMs);
	return Math.min(pollLimits.maxBudgetMs, Math.max(pollLimits.minBudgetMs, interval - pollLimits.marginMs));
}

export interface PollTurn {
	/** Whether a newer poll waits for this one: report what is there, start nothing new. */
	readonly wrappingUp: boolean;
	end(): void;
}

/**
 * This poll's turn: at once when no other poll of the node runs; else once the running one has
 * wrapped up and ended. Undefined when another poll already waits for it (that one takes over), or
 * the running one did not end in time (the next poll tries again).
 */
export async function takeTurn(key: object): Promise<PollTurn | undefined> {
	const turns = turnsFor(key);
	turns.starts = [...turns.starts, Date.now()].slice(-5);
	if (turns.running) {
		if (turns.waiting) return undefined;
		turns.waiting = true;
		turns.running.wrappingUp = true;
		const gaveUp = new AbortController();
		const ended = await Promise.race([
			turns.running.ended.then(() => true),
			pause(pollLimits.handoffWaitMs, gaveUp.signal).then(
				() => false,
				() => false,
			),
		]);
		gaveUp.abort();
		turns.waiting = false;
		if (!ended) return undefined;
	}
	let end!: () => void;
	const turn: Turn = { wrappingUp: false, ended: new Promise<void>((resolve) => (end = resolve)) };
	turns.running = turn;
	return {
		get wrappingUp() {
			return turn.wrappingUp;
		},
		end: () => {
			if (turns.running === turn) turns.running = undefined;
			end();
		},
	};
}
