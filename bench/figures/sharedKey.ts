// 12. One key, many runs at once (test/real/manyRunsOneKey.ts), in real n8n 2.41.1 at 10 reads/s and 5
// writes/s: the burst with Attach Captions, a 100-item Job → Create batch waiting with Poll and the
// polling trigger reporting 100 finished jobs with captions. The share of all requests answered 429,
// and the time until the last request against the floor: the slower of what the limits allow (what
// the service let through, at its rates) and the same runs in the same n8n on a key without limits
// (n8n's own pace on this machine). With n8n's defaults and with
// N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true (section 11); the small shape (60 events, 20 orders, 20
// polled) with both.
import path from 'node:path';

import { createN8n, installN8n, tempFolder } from '../../test/real/instance';
import type { SharedShape } from '../../test/real/manyRunsOneKey';
import { importSharedKey, runSharedKey, SHARED } from '../../test/real/manyRunsOneKey';
import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Row, Section } from '../support';
import { log, round } from '../support';

async function measure(env: NodeJS.ProcessEnv, limited: boolean, shape: SharedShape = SHARED) {
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	const work = tempFolder('bench-shared-key-');
	const n8n = await createN8n(
		await installN8n('2.41.1', log),
		[path.join(work, 'burst'), path.join(work, 'polled')],
		env,
	);
	try {
		await importSharedKey(n8n, sb, work, shape);
		await n8n.start();
		return await runSharedKey(n8n, sb, work, limited, shape);
	} finally {
		await n8n.stop();
		await sb.close();
	}
}

export const sharedKey: Section = {
	name: 'sharedKey',
	title: `12. one key at ${SHARED.readLimit} reads/s and ${SHARED.writeLimit} writes/s: the burst with captions, a ${SHARED.batch}-item batch waiting with Poll, the polling trigger reporting ${SHARED.polled} jobs, at once`,
	async run() {
		const figures: Record<string, number> = {};
		const rows: Row[] = [];
		const lazy = { N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE: 'true' };
		const small = { ...SHARED, burst: 60, batch: 20, polled: 20 };
		for (const [suffix, label, env, shape] of [
			['', "n8n's defaults", {}, SHARED],
			['Lazy', 'lazy isolates', lazy, SHARED],
			['Small', 'lazy isolates, 60 events, 20 orders, 20 polled', lazy, small],
			['SmallDefaults', "n8n's defaults, 60 events, 20 orders, 20 polled", {}, small],
		] as const) {
			const free = await measure(env, false, shape);
			log(
				`  ${label}, a key without limits: ${free.requests} requests in ${free.seconds.toFixed(1)} s; burst: ${free.burstExecutions} executions, ${free.burstSenderTimeouts} first tries past 10 s`,
			);
			const r = await measure(env, true, shape);
			const floor = Math.max(r.floorSeconds, free.seconds);
			log(
				`  ${label}: ${r.requests} requests (${r.refused} answered 429): ${r.reads} reads (${JSON.stringify(r.readsByRoute)}) and ${r.writes} writes let through in ${r.seconds.toFixed(1)} s (floor ${r.floorSeconds.toFixed(1)} s); burst: ${r.burstExecutions} executions, ${r.burstSenderTimeouts} first tries past 10 s, ${r.burstRanTwice} jobs run twice; polled: ${r.polledReported}, ${r.polledTwice} reported twice; batch: ${r.batchStatus}`,
			);
			const share = round(r.refused / r.requests, 3);
			const vsFloor = round(r.seconds / floor);
			Object.assign(figures, {
				[`sharedKey429Share${suffix}`]: share,
				[`sharedKeyVsFloor${suffix}`]: vsFloor,
			});
			rows.push(
				[
					`one key, runs at once (${label}): requests answered 429`,
					`${r.refused} of ${r.requests}`,
					`${r.reads} reads, ${r.writes} writes let through`,
					`${share}`,
					'≤ 0.3',
					share <= 0.3,
				],
				[
					`one key, runs at once (${label}): time vs the limits' floor`,
					`${r.seconds.toFixed(1)} s`,
					`floor ${floor.toFixed(1)} s (limits ${r.floorSeconds.toFixed(1)} s, no limits ${free.seconds.toFixed(1)} s)`,
					`${vsFloor}×`,
					'≤ 1.3×',
					vsFloor <= 1.3,
				],
			);
		}
		return { figures, rows };
	},
};
