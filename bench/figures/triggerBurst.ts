// 9. A burst at the webhook trigger, in real n8n 2.41.1 (installed into the cache if missing, as the
// e2e suite does): 150 jobs finish within 2 s, each event delivered twice, 10 reads/s; reads per
// event, and the p95 time until n8n answered a first try, against n8n's own Webhook node given the
// same burst in the same n8n (test/real/burst.ts), bursts alternating, two each.
import {
	activateBurstWorkflows,
	BURST_EVENTS,
	fireBurst,
	importBurstWorkflows,
} from '../../test/real/burst';
import { createN8n, installN8n } from '../../test/real/instance';
import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, p95, round } from '../support';

async function measure() {
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	const n8n = await createN8n(await installN8n('2.41.1', log));
	try {
		importBurstWorkflows(n8n, sb);
		await n8n.start();
		await activateBurstWorkflows(n8n);
		const firstTries = { trigger: [] as number[], webhookNode: [] as number[] };
		let reads = 0;
		let events = 0;
		for (const target of ['webhookNode', 'trigger', 'webhookNode', 'trigger'] as const) {
			const burst = await fireBurst(n8n, sb, target, BURST_EVENTS, { duplicate: true });
			firstTries[target].push(
				...burst.deliveries.filter((d) => d.attempt === 1).map((d) => d.ms ?? Infinity),
			);
			if (target === 'trigger') {
				reads += burst.reads;
				events += burst.events;
				if (burst.executions !== 2 * burst.events)
					log(
						`  WARNING: the trigger started ${burst.executions} executions for ${2 * burst.events} deliveries`,
					);
			}
			log(
				`  ${target}: ${burst.reads} reads, p95 answer ${burst.p95Ms} ms, ${burst.deliveries.filter((d) => d.attempt > 1).length} deliveries tried again`,
			);
		}
		return {
			reads,
			events,
			triggerP95Ms: p95(firstTries.trigger),
			webhookNodeP95Ms: p95(firstTries.webhookNode),
		};
	} finally {
		await n8n.stop();
		await sb.close();
	}
}

export const triggerBurst: Section = {
	name: 'triggerBurst',
	title: `9. a burst at the webhook trigger in real n8n: ${BURST_EVENTS} events in 2 s, each twice, 10 reads/s, against n8n's Webhook node`,
	async run() {
		const b = await measure();
		const figures = {
			triggerBurstReadsPerEvent: round(b.reads / b.events),
			triggerBurstP95VsWebhookNode: round(b.triggerP95Ms / b.webhookNodeP95Ms),
		};
		return {
			figures,
			rows: [
				[
					'trigger burst: reads per event',
					`${b.reads} reads`,
					`${b.events} events (2 bursts), each sent twice`,
					`${figures.triggerBurstReadsPerEvent}`,
					'≤ 0.2',
					figures.triggerBurstReadsPerEvent <= 0.2,
				],
				[
					"trigger burst: p95 answer vs n8n's Webhook node",
					`${b.triggerP95Ms} ms`,
					`Webhook node ${b.webhookNodeP95Ms} ms`,
					`${figures.triggerBurstP95VsWebhookNode}×`,
					'≤ 1.5×',
					figures.triggerBurstP95VsWebhookNode <= 1.5,
				],
			],
		};
	},
};
