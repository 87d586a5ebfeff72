// On Webhook's resume (waiting/webhook.ts orders and sleeps): each event of a waiting execution.
// While a job ordered with this execution's URL is open, the event is answered and the execution
// sleeps on; once none is, the batch is read back from the job list (each job's URL names its
// items) and handed on, paired with the items. What decides is always the batch as read last: the
// first pages of the open lists only spare that read while a job is plainly still open.
import type {
	IDataObject,
	INodeExecutionData,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';

import { respond } from '../events/respond';
import type { CaptioningEvent } from '../model/events';
import {
	EVENT_OF_STATUS,
	eventProblem,
	isFinal,
	orderedWith,
	STATUS_OF,
	webhookOwnPath,
} from '../model/events';
import type { Job } from '../model/types';
import { jobPages, notInWorkspace, readJob } from '../transport/jobs';
import { sleep } from '../transport/sleep';
import { itemsOf } from './webhook';

/** The jobs ordered with this execution's URL, by the items their URLs name, and the batch's size. */
interface ReadBack {
	byItem: Map<number, Job>;
	of: number;
}

const complete = ({ byItem, of }: ReadBack) => of > 0 && byItem.size >= of;

/**
 * The batch, read back from the job list: the job of each of its items, until the jobs ordered with
 * this execution's URL name all of them, or a few pages past what the batch holds.
 */
async function readBatch(ctx: IWebhookFunctions, path: string): Promise<ReadBack> {
	const read: ReadBack = { byItem: new Map(), of: 0 };
	let pages = 0;
	for await (const page of jobPages(ctx)) {
		for (const job of page.filter((j) => orderedWith(j, path))) {
			const named = itemsOf(job.options?.webhook_url);
			read.of ||= named.of;
			for (const item of named.items) read.byItem.set(item, job);
		}
		// The batch was ordered together: past a few pages more than it holds, the rest is not there.
		if (complete(read) || ++pages >= Math.ceil(Math.max(read.of, 1) / 100) + 10) break;
	}
	return read;
}

/** The batch's items with their jobs, in item order, as the node's output. */
function outputOf(read: ReadBack, event: CaptioningEvent): INodeExecutionData[] {
	return [...read.byItem.keys()]
		.sort((a, b) => a - b)
		.map((item): INodeExecutionData => {
			const job = read.byItem.get(item)!;
			return {
				json: {
					...(job as unknown as IDataObject),
					// Equal items share one order: the first ordered it, the others replayed it.
					idempotent_replayed: itemsOf(job.options?.webhook_url).items[0] !== item,
					event_type: EVENT_OF_STATUS[job.status],
					event_id: job.id === event.data.id ? event.id : null,
				},
				pairedItem: { item },
			};
		});
}

/** The answer to an event that leaves the execution sleeping. */
const sleepOn = (): IWebhookResponseData => ({
	webhookResponse: { received: true, resumed: false },
});

/**
 * What the jobs read now make of an event: the execution resumes with the batch; it sleeps on while
 * another job of the batch is open (its own event resumes the execution); the event is refused when
 * its job is not in the workspace, or was not ordered with this execution's URL. Undefined while
 * the event's job, or the batch, does not show final yet (or could not be read): read again.
 */
async function answerTo(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	path: string,
): Promise<IWebhookResponseData | undefined> {
	let read: ReadBack;
	let own: Job | undefined;
	try {
		// A job ordered with this execution's URL that the first page of an open list shows.
		for (const status of ['processing', 'queued'] as const) {
			const page = (await jobPages(ctx, { status }).next()).value || [];
			const open = page.find((job: Job) => orderedWith(job, path));
			if (open) return open.id === event.data.id ? undefined : sleepOn();
		}
		read = await readBatch(ctx, path);
		// A job of the batch still open (on a later page of its list, or it moved on since): its own
		// event resumes the execution.
		const stillOpen = [...read.byItem.values()].find((job) => !isFinal(job));
		if (stillOpen && stillOpen.id !== event.data.id) return sleepOn();
		own = [...read.byItem.values()].find((job) => job.id === event.data.id);
		own ??= await readJob(ctx, event.data.id);
	} catch (error) {
		if (!notInWorkspace(error)) return undefined;
	}
	if (!own || !orderedWith(own, path))
		return respond(ctx, 403, {
			error: `Event refused: job ${event.data.id} is not one this execution waits for.`,
		});
	const shown =
		own.status === STATUS_OF[event.type] &&
		complete(read!) &&
		[...read!.byItem.values()].every(isFinal);
	return shown ? { workflowData: [outputOf(read!, event)] } : undefined;
}

/** How long an event waits in its request for reads to show what it reports (it may come first). */
const RESUME_WAIT_MS = 2 * 60000;

/**
 * Resumes an execution waiting in Job → Create (On Webhook). n8n checks the resume token in the
 * URL. While a job ordered with this execution's URL is open, the event is taken and the execution
 * sleeps on (a read or two an event, whatever the batch's size); once none is, the batch is read
 * back, the event's job must back it up (in the workspace, with the status the event says, ordered
 * with this URL), and the execution resumes with the jobs, paired with their items. An event that
 * comes before reads show its job final waits in its request and reads again, 1 s, 2 s, 4 s… apart,
 * for up to 2 minutes: the service may not deliver it again. n8n answers a resume once it
 * has resumed the execution (when the last events arrive at once, one resumes it and n8n answers
 * the others 500: their news is handed on all the same).
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	const path = webhookOwnPath(this.getRequestObject().originalUrl);
	const until = Date.now() + RESUME_WAIT_MS;
	for (let delay = 1000; ; delay = Math.min(delay * 2, 10000)) {
		const answer = await answerTo(this, event, path);
		if (answer) return answer;
		if (Date.now() + delay > until) return sleepOn();
		await sleep(delay);
	}
}
