// Wait for Completion: On Webhook (its resume: waiting/resume.ts). Every job of the run is ordered
// with this execution's resume URL and the execution sleeps in n8n's database (n8n's send-and-wait pattern): nothing polls, nothing
// is held, restarts and execution time limits do not touch it. It resumes once, when the service's
// events show every job of the batch completed or cancelled.
// The service is the record of the batch, read through n8n's public interface only: each order's
// Webhook URL names, after the resume URL, the items it was ordered for and how many the batch
// has (`items=3,7&of=20`; equal items share one order). An event reads the open jobs' lists for a
// job ordered with this execution's URL; once none is open, the batch is read back from the job
// list and handed on, paired with its items. A batch the URL cannot describe (an item that failed,
// a job another execution ordered, equal files the node found equal only once ordered) is waited
// for here instead, as Poll does. When the Timeout passes first, n8n hands on the node's input
// items, as it does for its own Wait node.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { EVENT_OF_STATUS, isFinal } from '../model/events';
import { refuse } from '../transport/errors';
import type { CreateJobBody, Job } from '../model/types';
import type { JobWaiter } from './poll';

/** The most characters of a Webhook URL the service accepts. */
const MAX_URL = 2048;

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS.
 */
export function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (body.webhook_url)
		refuse(
			ctx,
			i,
			'Options → Webhook URL cannot be combined with Wait for Completion: On Webhook',
			"On Webhook gives the service this execution's own resume URL. Remove Options → Webhook URL, or wait with Poll (or a Captioning Trigger).",
		);
	// As n8n's Wait node: $execution.resumeUrl (which carries the execution's resume token where n8n
	// has one), then this node's id, the path of the restart webhook below.
	const resume = new URL(String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i)));
	resume.pathname = `${resume.pathname.replace(/\/$/, '')}/${ctx.getNode().id}`;
	if (resume.protocol !== 'https:')
		refuse(
			ctx,
			i,
			`n8n's webhook address ${resume.origin} is not HTTPS, and the service only calls https:// URLs`,
			'Serve n8n over HTTPS and set the WEBHOOK_URL environment variable to its public https:// address, or set Wait for Completion to Poll. Nothing was ordered.',
		);
	return resume.toString();
}

/** Item indexes as a short list: runs of three or more as ranges (`3,7,10-12`). */
function listOf(items: number[]): string {
	const parts: string[] = [];
	for (let n = 0; n < items.length; ) {
		let end = n;
		while (end + 1 < items.length && items[end + 1] === items[end] + 1) end += 1;
		parts.push(end - n >= 2 ? `${items[n]}-${items[end]}` : items.slice(n, end + 1).join(','));
		n = end + 1;
	}
	return parts.join(',');
}

/**
 * The Webhook URL of an order for these items of a batch of `of`: the resume URL naming them. When
 * that is longer than the service takes, it names the first only (the others then wait in place).
 */
export function batchUrl(resumeUrl: string, items: number[], of: number): string {
	const url = new URL(resumeUrl);
	url.searchParams.set('items', listOf(items));
	url.searchParams.set('of', String(of));
	if (url.toString().length <= MAX_URL) return url.toString();
	url.searchParams.set('items', String(items[0]));
	return url.toString();
}

/** The items and the batch's size a job's Webhook URL names, if it is an On Webhook order's. */
export function itemsOf(webhookUrl: unknown): { items: number[]; of: number } {
	const url = String(webhookUrl ?? '');
	const params = URL.canParse(url) ? new URL(url).searchParams : new URLSearchParams();
	const items = (params.get('items') ?? '').split(',').flatMap((part) => {
		const [from, to = from] = part.split('-').map(Number);
		return Number.isInteger(from) && Number.isInteger(to) && to >= from
			? Array.from({ length: to - from + 1 }, (_, k) => from + k)
			: [];
	});
	const of = Number(params.get('of'));
	return { items, of: Number.isInteger(of) && of > 0 ? of : 0 };
}

/** How often On Webhook checks the jobs where it waits in place. */
export const inPlaceWait = { pollS: 15 };

const isJob = (json: IDataObject) => json.object === 'job' && typeof json.id === 'string';

const itemOf = (item: INodeExecutionData) => (item.pairedItem as { item: number }).item;

/** Why the jobs' URLs do not describe the batch, if so. */
function inPlaceReason(outputs: INodeExecutionData[], elsewhere: Set<string>) {
	if (outputs.some((item) => !isJob(item.json))) return 'failed';
	if (outputs.some((item) => elsewhere.has(item.json.id as string))) return 'elsewhere';
	const named = (item: INodeExecutionData) =>
		itemsOf((item.json as unknown as Job).options?.webhook_url).items.includes(itemOf(item));
	return outputs.every(named) ? undefined : 'unnamed';
}

/**
 * On Webhook, once every item of the run is ordered: nothing to wait for when every job is final
 * (a repeat of orders that finished). Where the jobs' URLs do not describe the batch (an item that
 * failed, a job another execution ordered: its events go there, an item no job's URL names), they
 * are checked here every `inPlaceWait.pollS` seconds until their Timeout, and the reason is
 * returned. Otherwise the execution sleeps until the events, as long as the longest Timeout.
 */
export async function waitForJobs(
	ctx: IExecuteFunctions,
	outputs: INodeExecutionData[],
	batch: { webhookTimeouts: Map<number, number>; orderedElsewhere: Set<string>; waiter: JobWaiter },
): Promise<ReturnType<typeof inPlaceReason>> {
	const open = outputs.filter((item) => isJob(item.json) && !isFinal(item.json as unknown as Job));
	const reason = inPlaceReason(outputs, batch.orderedElsewhere);
	if (open.length === 0) return undefined;
	if (!reason) {
		const minutes = Math.max(...batch.webhookTimeouts.values());
		await ctx.putExecutionToWait(new Date(Date.now() + minutes * 60000));
		return undefined;
	}
	await Promise.all(
		open.map(async (item) => {
			try {
				const job = await batch.waiter.wait(
					item.json as unknown as Job,
					itemOf(item),
					inPlaceWait.pollS,
					batch.webhookTimeouts.get(itemOf(item))!,
				);
				item.json = {
					...item.json,
					...(job as unknown as IDataObject),
					event_type: EVENT_OF_STATUS[job.status],
					event_id: null,
				};
			} catch {
				// As a wait that ends by its Timeout: the job as last known, to check later with Job → Get.
			}
		}),
	);
	return reason;
}
