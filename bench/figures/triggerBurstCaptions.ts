// 11. The burst of section 9 at the Captioning Trigger with Attach Captions (SRT, a file per job, as
// the Drive and S3 templates use it), in real n8n 2.41.1: p95 of the time to answer a first try
// against n8n's Webhook node given the same burst in the same n8n (bursts alternating, two each),
// first tries the sender gave up on (no answer within 10 s), and the share of the key's reads
// answered 429. Twice: with n8n's defaults, where n8n builds an expression isolate for every delivery
// to a community trigger, and with N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true, which docs/triggers.md recommends
// for bursts (CONTRIBUTING, "n8n's faults").
import {
	activateBurstWorkflows,
	BURST_EVENTS,
	fireBurst,
	importBurstWorkflows,
} from '../../test/real/burst';
import { createN8n, installN8n, tempFolder } from '../../test/real/instance';
import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Row, Section } from '../support';
import { log, p95, round } from '../support';

async function measure(env: NodeJS.ProcessEnv) {
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	const captionsTo = tempFolder('bench-burst-srt-');
	const n8n = await createN8n(await installN8n('2.41.1', log), [captionsTo], env);
	try {
		await importBurstWorkflows(n8n, sb, captionsTo);
		await n8n.start();
		await activateBurstWorkflows(n8n, true);
		const firstTries = { triggerCaptions: [] as number[], webhookNode: [] as number[] };
		const timeouts = { triggerCaptions: 0, webhookNode: 0 };
		let reads = 0;
		let refused = 0;
		for (const target of [
			'webhookNode',
			'triggerCaptions',
			'webhookNode',
			'triggerCaptions',
		] as const) {
			const burst = await fireBurst(n8n, sb, target, BURST_EVENTS);
			firstTries[target].push(
				...burst.deliveries.filter((d) => d.attempt === 1).map((d) => d.ms ?? Infinity),
			);
			timeouts[target] += burst.senderTimeouts;
			if (target === 'triggerCaptions') {
				reads += burst.allReads;
				refused += burst.allRefused;
				if (burst.executions !== burst.events) {
					// An event answered 200 had its execution promised: fewer executions than such jobs is a loss after the answer.
					const answered = new Set(
						burst.deliveries.filter((d) => d.status === 200).map((d) => d.eventId),
					).size;
					log(
						`  WARNING: the trigger started ${burst.executions} executions for ${burst.events} jobs; events with a try answered 200 in time: ${answered}`,
					);
				}
			}
			log(
				`  ${target}: p95 answer ${burst.p95Ms} ms, ${burst.senderTimeouts} first tries past 10 s, ${burst.allReads} reads (${burst.allRefused} answered 429), all executions after ${burst.totalMs} ms`,
			);
		}
		return {
			triggerP95Ms: p95(firstTries.triggerCaptions),
			webhookNodeP95Ms: p95(firstTries.webhookNode),
			timeouts,
			reads,
			refused,
		};
	} finally {
		await n8n.stop();
		await sb.close();
	}
}

export const triggerBurstCaptions: Section = {
	name: 'triggerBurstCaptions',
	title: `11. the burst with Attach Captions (SRT) in real n8n 2.41.1, against n8n's Webhook node: with n8n's defaults, then with lazy isolates`,
	async run() {
		const figures: Record<string, number> = {};
		const rows: Row[] = [];
		for (const [suffix, label, env] of [
			['', "n8n's defaults", {}],
			[
				'Lazy',
				'N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true',
				{ N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE: 'true' },
			],
		] as const) {
			log(`  ${label}:`);
			const b = await measure(env);
			const ratio = round(b.triggerP95Ms / b.webhookNodeP95Ms);
			const share = round(b.refused / b.reads, 3);
			Object.assign(figures, {
				[`triggerBurstCaptionsP95VsWebhookNode${suffix}`]: ratio,
				[`triggerBurstCaptionsSenderTimeouts${suffix}`]: b.timeouts.triggerCaptions,
				[`triggerBurstCaptionsWebhookNodeTimeouts${suffix}`]: b.timeouts.webhookNode,
				[`triggerBurstCaptions429Share${suffix}`]: share,
			});
			rows.push(
				[
					`burst with captions (${label}): p95 answer vs Webhook node`,
					`${b.triggerP95Ms} ms`,
					`Webhook node ${b.webhookNodeP95Ms} ms`,
					`${ratio}×`,
					'≤ 1.2×',
					ratio <= 1.2,
				],
				[
					`burst with captions (${label}): first tries past 10 s`,
					`${b.timeouts.triggerCaptions} of 600`,
					`Webhook node ${b.timeouts.webhookNode} of 600`,
					'',
					"≤ the Webhook node's",
					b.timeouts.triggerCaptions <= b.timeouts.webhookNode,
				],
				[
					`burst with captions (${label}): reads answered 429`,
					`${b.refused} of ${b.reads}`,
					'2 bursts, 10 reads/s',
					`${share}`,
					'≤ 0.1',
					share <= 0.1,
				],
			);
		}
		return { figures, rows };
	},
};
