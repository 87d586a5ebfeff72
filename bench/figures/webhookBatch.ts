// 8. On Webhook for a batch of 100 (jobs left queued) and of 1,000 (jobs processing, as a service
// works through them): reads the resume webhook sends per event received, and for 100 the time from
// the last event's delivery to the end of the resumed run (the next node's start, at most).
import type { IExecuteFunctions, INodeType } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { node } from '../../test/engine/workflow';
import { runUntilWaiting } from '../../test/engine/waiting';
import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, round } from '../support';

/** The node after Job → Create: passes its items on. */
const nextNode: INodeType = {
	description: {
		displayName: 'Next',
		name: 'noOp',
		group: ['transform'],
		version: 1,
		description: '',
		defaults: {},
		inputs: ['main'],
		outputs: ['main'],
		properties: [],
	} as unknown as INodeType['description'],
	async execute(this: IExecuteFunctions) {
		return [this.getInputData()];
	},
};

/** Items waiting On Webhook: the jobs complete one by one, the sandbox delivers each event. */
async function measure(items: number, processing: boolean) {
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	try {
		const parameters = {
			resource: 'job',
			operation: 'create',
			source: 'url',
			mediaUrl: '={{ $json.url }}',
			waitForCompletion: 'webhook',
			timeout: 60,
		};
		const waiting = await runUntilWaiting({
			nodes: [
				node('Captioning', 'captioning', parameters, { typeVersion: 1 }),
				node('Next', 'noOp', {}),
			],
			connections: { Captioning: { main: [[{ node: 'Next', type: 'main', index: 0 }]] } },
			nodeName: 'Captioning',
			nodeTypes: { captioning: new Captioning(), noOp: nextNode },
			// The invoiced workspace: 1,000 orders exceed the prepaid one's balance.
			credentials: { captioningApi: { apiKey: sb.keys.otherWorkspace, baseUrl: sb.baseUrl } },
			input: Array.from({ length: items }, (_, i) => ({
				json: { url: `https://media.example.com/webhook-batch/${i}.mp4` },
			})),
			mode: 'webhook',
			// A workflow of its own per measure: each has a sandbox of its own (n8n's store of what was sent is the process's).
			workflowId: `bench-webhook-batch-${items}`,
		});
		try {
			const { error } = waiting.first.run.data.resultData;
			if (error) throw new Error(`the batch did not start waiting: ${error.message}`);
			const ids = sb.ledger.jobs.map((j) => j.id);
			if (processing) for (const id of ids) sb.startJob(id);
			const readsBefore = sb.ledger.requests.filter((r) => r.method === 'GET').length;
			for (const id of ids.slice(0, -1)) {
				sb.completeJob(id);
				await sb.settleDeliveries();
			}
			const started = process.hrtime.bigint();
			sb.completeJob(ids.at(-1)!);
			const done = await waiting.resumed;
			const resumeMs = Number(process.hrtime.bigint() - started) / 1e6;
			if (done.output('Next').length !== items)
				throw new Error('the resumed run did not hand on every job');
			const reads = sb.ledger.requests.filter((r) => r.method === 'GET').length - readsBefore;
			return { items, events: waiting.answers.length, reads, resumeMs };
		} finally {
			await waiting.close();
		}
	} finally {
		await sb.close();
	}
}

export const webhookBatch: Section = {
	name: 'webhookBatch',
	title: '8. On Webhook for batches of 100 and 1,000 items, every job completing on its own',
	async run() {
		const w = await measure(100, false);
		log(
			`  100 items: ${w.events} events, ${w.reads} reads, last event to resumed: ${w.resumeMs.toFixed(0)} ms`,
		);
		const big = await measure(1000, true);
		log(`  1,000 items: ${big.events} events, ${big.reads} reads`);
		const figures = {
			webhookBatchReadsPerEvent: round(w.reads / w.events),
			webhookBatchResumeMs: round(w.resumeMs, 0),
			webhookResumeReadsPerEvent: round(big.reads / big.events),
		};
		return {
			figures,
			rows: [
				[
					'On Webhook, 100 items: reads per event',
					`${w.reads} reads`,
					`${w.events} events`,
					`${figures.webhookBatchReadsPerEvent}`,
					'≤ 2',
					figures.webhookBatchReadsPerEvent <= 2,
				],
				[
					'On Webhook: last event to resumed run',
					`${figures.webhookBatchResumeMs} ms`,
					'100 jobs read back',
					'',
					'≤ 1000 ms',
					figures.webhookBatchResumeMs <= 1000,
				],
				[
					'On Webhook, 1,000 items: reads per event',
					`${big.reads} reads`,
					`${big.events} events`,
					`${figures.webhookResumeReadsPerEvent}`,
					'≤ 2',
					figures.webhookResumeReadsPerEvent <= 2,
				],
			],
		};
	},
};
