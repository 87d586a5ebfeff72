// 15. A burst larger than any memory of the trigger's, in real n8n 2.41.1 with its default settings:
// 600 completions within 2 s at the Captioning Trigger with Attach Captions (SRT, appended to a file
// per job), each delivered twice and again while a try fails (10 tries). Once the deliveries have
// settled: the jobs whose SRT was written exactly once (one successful execution each). Slower is
// acceptable; twice, or never, is not.
import { readFileSync, existsSync } from 'node:fs';

import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import {
	activateBurstWorkflows,
	fireBurst,
	importBurstWorkflows,
	srtPath,
} from '../../test/real/burst';
import { createN8n, installN8n, tempFolder } from '../../test/real/instance';
import type { Section } from '../support';
import { log } from '../support';

const COUNT = 600;

export const burst600: Section = {
	name: 'burst600',
	title: `15. ${COUNT} completions within 2 s at the Captioning Trigger with Attach Captions, each delivered twice, in n8n 2.41.1 with its defaults`,
	async run() {
		const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
		const captionsTo = tempFolder('bench-burst600-srt-');
		const n8n = await createN8n(await installN8n('2.41.1', log), [captionsTo]);
		try {
			await importBurstWorkflows(n8n, sb, captionsTo);
			await n8n.start();
			await activateBurstWorkflows(n8n, true);
			const burst = await fireBurst(n8n, sb, 'triggerCaptions', COUNT, { attempts: 10 });
			const once = burst.ids.filter(
				(id) =>
					existsSync(srtPath(captionsTo, id)) &&
					(readFileSync(srtPath(captionsTo, id), 'utf8').match(/^1\n00:00:00,000 --> /gm) ?? [])
						.length === 1,
			).length;
			const twice = burst.ids.filter(
				(id) =>
					existsSync(srtPath(captionsTo, id)) &&
					(readFileSync(srtPath(captionsTo, id), 'utf8').match(/^1\n00:00:00,000 --> /gm) ?? [])
						.length > 1,
			).length;
			const statuses = burst.deliveries.reduce<Record<string, number>>(
				(acc, d) => ({
					...acc,
					[String(d.status ?? d.error)]: (acc[String(d.status ?? d.error)] ?? 0) + 1,
				}),
				{},
			);
			log(
				`  ${once} of ${COUNT} jobs written once, ${twice} more than once; ${burst.executions} executions; answers ${JSON.stringify(statuses)}; p95 first answer ${burst.p95Ms} ms`,
			);
			const figures = { burst600OneEach: once };
			return {
				figures,
				rows: [
					[
						`burst of ${COUNT}, each twice (n8n's defaults): jobs with exactly one execution`,
						`${once}`,
						`${COUNT} jobs; ${twice} twice or more`,
						'',
						`${COUNT}`,
						once === COUNT,
					],
				],
			};
		} finally {
			await n8n.stop();
			await sb.close();
		}
	},
};
