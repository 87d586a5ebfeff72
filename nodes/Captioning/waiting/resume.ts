// On Webhook's resume (waiting/webhook.ts orders and sleeps): each event of a waiting execution.
// The execution's input is its items as ordered, so an event is checked against the jobs it waits
// for, and the batch is read by their ids. While a job of the batch is open, the event is answered
// and the execution sleeps on (its own event resumes it); once every job shows final, the execution
// resumes with the jobs as read, paired with their items. An event that comes before reads show its
// job's status is answered at once (a sender waits seconds), then its job is read again until it
// shows, and the batch decided then.
import type {
	IDataObject,
	INodeExecutionData,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';

import type { CaptioningEvent } from '../model/events';
import { EVENT_OF_STATUS, eventProblem, isFinal } from '../model/events';
import type { Job } from '../model/types';
import { jobPages, notInWorkspace, PAGE_SIZE, readJob, readJobs } from '../transport/jobs';
import { sleep } from '../transport/sleep';

const jobOf = (item: INodeExecutionData) =>
	item.json.object === 'job' ? (item.json as unknown as Job) : undefined;

/** The waits (execution and jobs) this process resumed, until the Timeout: one resume per wait. */
const resumedWaits = new Map<string, number>();

/** Whether this answer is the wait's first to resume it: n8n 1.122.5 runs each resume it is handed. */
function claims(ctx: IWebhookFunctions, jobs: Job[]): boolean {
	const wait = [ctx.getExecutionId(), ...jobs.map((job) => job.id)].join();
	for (const [key, until] of resumedWaits) if (until < Date.now()) resumedWaits.delete(key);
	if (resumedWaits.has(wait)) return false;
	resumedWaits.set(wait, Date.now() + Number(ctx.getNodeParameter('timeout', 120)) * 60000);
	return true;
}

/** Answers the event itself (n8n answers nothing more). */
function respond(ctx: IWebhookFunctions, status: number, body: IDataObject): IWebhookResponseData {
	ctx.getResponseObject().status(status).json(body);
	return { noWebhookResponse: true };
}

/** The answer to an event that leaves the execution sleeping. */
const SLEEP_ON = { webhookResponse: { received: true, resumed: false } };

/**
 * What reads make of an event of a job of the batch, once its own job shows final (a job no longer
 * in the workspace counts as done): the execution sleeps on while another job of the batch is open
 * (that job's own event decides later), and resumes with the batch once every job shows final.
 * Undefined while its own job does not show final yet, or the jobs could not be read: decide later.
 * The first pages of the processing and queued lists come first: where one holds another job of
 * the batch, the event's own job is all there is left to read.
 */
async function answerTo(
	ctx: IWebhookFunctions,
	items: INodeExecutionData[],
	event: CaptioningEvent,
): Promise<IWebhookResponseData | undefined> {
	const jobs = items.map(jobOf).filter((job): job is Job => job !== undefined);
	const gone = (job: Job | Error) => job instanceof Error && notInWorkspace(job);
	const done = (job: Job | Error) => (job instanceof Error ? gone(job) : isFinal(job));
	try {
		let whole = true;
		for (const status of jobs.length > 1 ? (['processing', 'queued'] as const) : []) {
			const page = (await jobPages(ctx, { status }).next()).value || [];
			if (page.some((job: Job) => job.id === event.data.id)) return undefined;
			whole &&= page.length < PAGE_SIZE;
			if (!page.some((job: Job) => jobs.some((mine) => mine.id === job.id))) continue;
			// Not in the open lists' first pages: while they are whole, its own job is not open.
			if (whole && status === 'queued') return SLEEP_ON;
			const own = await readJob(ctx, event.data.id).catch((error: Error) => error);
			return done(own) ? SLEEP_ON : undefined;
		}
		const read = await readJobs(ctx, jobs);
		const all = [...read.values()];
		if (!done(read.get(event.data.id)!) || all.some((job) => job instanceof Error && !gone(job)))
			return undefined;
		if (!all.every(done) || !claims(ctx, jobs)) return SLEEP_ON;
		return { workflowData: [items.map((item) => resumed(item, read, event))] };
	} catch {
		return undefined;
	}
}

/** An item of the resumed batch: its job as read (with the event's id for the event's own job), or the item as it was. */
function resumed(
	item: INodeExecutionData,
	read: Map<string, Job | Error>,
	event: CaptioningEvent,
): INodeExecutionData {
	const job = read.get(jobOf(item)?.id ?? '');
	if (!job || job instanceof Error) return item;
	return {
		json: {
			...(job as unknown as IDataObject),
			idempotent_replayed: item.json.idempotent_replayed,
			event_type: EVENT_OF_STATUS[job.status],
			event_id: job.id === event.data.id ? event.id : null,
		},
		pairedItem: item.pairedItem,
	};
}

/**
 * Resumes an execution waiting in Job → Create (On Webhook); n8n checks the resume token in the
 * URL. An event of a job this execution does not wait for is refused (403). One whose job shows
 * what it reports is decided at once: n8n answers a resume once it has resumed the execution, and
 * only a wait's first answer that resumes it hands n8n the resume. Any other is answered at once and
 * decided once reads show its job final, reading again 1 s, 2 s, 4 s… (up to 30 s) apart, until a
 * Timeout after its job was ordered, before n8n's own resume by Timeout (which a later resume would
 * run again on n8n 1.122.5): the service may deliver it once only.
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	// The items the execution waits with, as ordered (jobs, and error items of failed ones).
	const items = this.evaluateExpression('{{ $input.all() }}', 0) as unknown as INodeExecutionData[];
	const ordered = items.map(jobOf).find((job) => job?.id === event.data.id);
	if (!ordered)
		return respond(this, 403, {
			error: `Event refused: job ${event.data.id} is not one this execution waits for.`,
		});
	const answer = await answerTo(this, items, event);
	if (answer) return answer;
	respond(this, 200, SLEEP_ON.webhookResponse);
	const until =
		Date.parse(ordered.created_at) + Number(this.getNodeParameter('timeout', 120)) * 60000;
	for (let delay = 1000; Date.now() + delay < until; delay = Math.min(delay * 2, 30000)) {
		await sleep(delay);
		const later = await answerTo(this, items, event);
		if (later) return { workflowData: later.workflowData, noWebhookResponse: true };
	}
	return { noWebhookResponse: true };
}
