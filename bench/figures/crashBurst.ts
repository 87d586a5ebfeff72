// 14. n8n killed mid-burst (test/real/killedBurst.ts) in real n8n 2.41.1 with its default settings:
// 150 completions at the Captioning Trigger with Attach Captions (SRT), each delivered once and again
// while a try fails; n8n killed once a third are answered 200, then started again. Answered events
// with no execution at all (n8n answers once it has stored the execution: none may be lost).
import { tlsPair } from '../../test/helpers/https';
import { createSandbox } from '../../test/helpers/sandbox';
import { activateBurstWorkflows, importBurstWorkflows } from '../../test/real/burst';
import { createN8n, installN8n, tempFolder } from '../../test/real/instance';
import { killMidBurst } from '../../test/real/killedBurst';
import type { Section } from '../support';
import { log } from '../support';

const COUNT = 150;

export const crashBurst: Section = {
	name: 'crashBurst',
	title: `14. n8n 2.41.1 (its defaults) killed mid-burst: ${COUNT} completions with Attach Captions, killed once a third are answered`,
	async run() {
		const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
		const captionsTo = tempFolder('bench-crash-srt-');
		const n8n = await createN8n(await installN8n('2.41.1', log), [captionsTo]);
		try {
			importBurstWorkflows(n8n, sb, captionsTo);
			await n8n.start();
			await activateBurstWorkflows(n8n, true);
			const k = await killMidBurst(n8n, sb, COUNT);
			log(
				`  ${k.answeredBeforeKill} answered before the kill, ${k.answered.size} in all; ${k.executions.length} executions (${k.crashed.length} crashed, ${k.leftNew} left new and ${k.leftRunning} left running by n8n); lost ${k.lost.length}`,
			);
			const figures = { crashBurstLostAnswered: k.lost.length };
			return {
				figures,
				rows: [
					[
						'killed mid-burst: answered events with no execution',
						`${k.lost.length}`,
						`${k.answeredBeforeKill} answered before the kill, ${k.executions.length} executions (${k.crashed.length} crashed)`,
						'',
						'0',
						k.lost.length === 0,
					],
				],
			};
		} finally {
			await n8n.stop();
			await sb.close();
		}
	},
};
