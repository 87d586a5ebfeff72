// What happened in a run, shown where users look: n8n's execution hints above the node's output,
// one a kind with its counts, beside the item fields that say the same per item.
import type { IExecuteFunctions, INodeExecutionData, NodeExecutionHint } from 'n8n-workflow';

import { TEXT_CHARS } from '../captions';
import { IN_PLACE_POLL_S } from '../waiting/webhook';
import { runStateOf } from './runState';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Shows the run's hints above its output (n8n 1.x and 2.x; nothing where n8n has no hints). */
export function showHints(ctx: IExecuteFunctions, outputs: INodeExecutionData[]): void {
	const runNotes = runStateOf(ctx).notes;
	const hints: NodeExecutionHint[] = [];
	const jobs = outputs.filter((o) => o.json.object === 'job');
	const replayed = jobs.filter((o) => o.json.idempotent_replayed === true).length;
	if (replayed > 0) {
		hints.push({
			message: `${replayed} of ${plural(jobs.length, 'order')} replayed a job ordered before (Idempotency), so nothing was charged for ${replayed === 1 ? 'it' : 'them'}. Their items have idempotent_replayed: true.`,
			location: 'outputPane',
		});
	}
	const cut = new Map<string, number>();
	for (const o of outputs)
		for (const format of (o.json.caption_truncated as string[] | undefined) ?? [])
			cut.set(format, (cut.get(format) ?? 0) + 1);
	if (cut.size > 0) {
		const byFormat = [...cut].map(([format, n]) => `${format.toUpperCase()}: ${n}`).join(', ');
		hints.push({
			message: `Caption text was cut at ${TEXT_CHARS.toLocaleString('en-US')} characters in the JSON (${byFormat}); caption_truncated names the format. Set Put Captions In to Binary Files or Both for the whole file.`,
			type: 'warning',
			location: 'outputPane',
		});
	}
	if (runNotes.webhookInPlace) {
		// Why On Webhook checked the jobs here, as Poll does, instead of sleeping until the events.
		const why = {
			subWorkflow:
				"this workflow ran as a sub-workflow, and n8n 1.x hands a parent that waits for it its own input back when a sub-workflow resumes from a webhook. For a wait that survives restarts, order with Don't Wait and store the captions from a Captioning Trigger workflow.",
			elsewhere:
				'some orders replayed jobs an earlier execution of this workflow ordered with On Webhook, so their events go to that execution.',
		}[runNotes.webhookInPlace];
		hints.push({
			message: `On Webhook waited here by checking the jobs every ${IN_PLACE_POLL_S} s, as Poll does: ${why}`,
			location: 'outputPane',
		});
	}
	if (runNotes.wholeHistory) {
		const { read, matched } = runNotes.wholeHistory;
		hints.push({
			message: `The Metadata or Title filter read the whole job history (${plural(read, 'job')}) to find ${plural(matched, 'match', 'matches')}: the service filters by status only. A Limit, or a Status filter, stops sooner.`,
			location: 'outputPane',
		});
	}
	ctx.addExecutionHints?.(...hints);
}
