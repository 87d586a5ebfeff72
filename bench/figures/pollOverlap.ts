// 13. The polling trigger under a flood (test/real/flood.ts) in real n8n 2.41.1: 300 jobs with
// captions finish at once, 10 reads/s, polls every 20 s. The longest time with no request to the
// service while captions were still to download (the executions that download them stalling, or
// leaving the key idle), and the worst time from the first poll after the flood to a job's report
// (its SRT written), against what downloading every caption at the read limit takes.
import path from 'node:path';

import { activateFlood, describePolls, importFlood, runFlood } from '../../test/real/flood';
import { createN8n, installN8n, tempFolder } from '../../test/real/instance';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, round } from '../support';

const FLOOD = { jobs: 300, everySeconds: 20, readLimit: 10 };

export const pollOverlap: Section = {
	name: 'pollOverlap',
	title: `13. the polling trigger under a flood in real n8n 2.41.1: ${FLOOD.jobs} jobs with captions, ${FLOOD.readLimit} reads/s, polls every ${FLOOD.everySeconds} s`,
	async run() {
		const sb = await createSandbox({ timing: null });
		const work = tempFolder('bench-flood-');
		const out = path.join(work, 'polled');
		const n8n = await createN8n(await installN8n('2.41.1', log), [work]);
		try {
			await importFlood(n8n, sb, out, FLOOD.everySeconds);
			const since = Date.now();
			await n8n.start();
			await activateFlood(n8n, sb, since);
			const f = await runFlood(n8n, sb, out, FLOOD);
			log(
				`  last job reported after ${(f.lastReportedMs / 1000).toFixed(1)} s; ${f.listReads} list reads, ${f.downloads} downloads, ${f.refused} answered 429; polls: ${describePolls(f.polls)}`,
			);
			if (!f.writtenOnce || f.reported !== FLOOD.jobs)
				throw new Error(`the flood was not reported once each (${f.reported} reports)`);
			const downloadsS = FLOOD.jobs / FLOOD.readLimit;
			const figures = {
				pollOverlapIdleS: round(f.idleMaxMs / 1000),
				pollReportLagS: round(f.reportLagMs / 1000, 1),
			};
			return {
				figures,
				rows: [
					[
						'flood: longest idle while captions remained',
						`${figures.pollOverlapIdleS} s`,
						`polls every ${FLOOD.everySeconds} s`,
						'',
						'≤ 2 s',
						figures.pollOverlapIdleS <= 2,
					],
					[
						'flood: worst report after the first poll',
						`${figures.pollReportLagS} s`,
						`${FLOOD.jobs} downloads at ${FLOOD.readLimit}/s: ${downloadsS} s`,
						'',
						`≤ ${downloadsS + 5} s`,
						figures.pollReportLagS <= downloadsS + 5,
					],
				],
			};
		} finally {
			await n8n.stop();
			await sb.close();
		}
	},
};
