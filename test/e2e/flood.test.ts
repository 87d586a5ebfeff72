// The Captioning Polling Trigger under a flood, in real n8n (npm run test:e2e): 150 jobs finish at
// once, the service allows 10 reads a second, Attach Captions downloads each job's SRT, and n8n polls
// every 10 s: the downloads (15 s at the read limit, in the execution a poll starts) outlast the
// interval. Every job must be reported once and its SRT written once. Prints the list reads, each
// reporting poll's reads, the longest idle time of the key while captions remained and the time
// until the last job was reported (the bench holds their targets: they depend on the machine's
// load). Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import path from 'node:path';

import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { activateFlood, describePolls, importFlood, runFlood } from '../real/flood';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder } from '../real/instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const FLOOD = { jobs: 150, everySeconds: 10, readLimit: 10 };

describe.each(VERSIONS)('n8n %s: the polling trigger under a flood', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const work = tempFolder('captioning-flood-');
	const out = path.join(work, 'polled');

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null });
			n8n = await createN8n(await installN8n(version), [work]);
			await importFlood(n8n, sb, out, FLOOD.everySeconds);
			const since = Date.now();
			await n8n.start();
			await activateFlood(n8n, sb, since);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test(`${FLOOD.jobs} jobs finish at once under a read limit of ${FLOOD.readLimit}/s, polls every ${FLOOD.everySeconds} s: each job reported once, each SRT written once, no stall`, async () => {
		const flood = await runFlood(n8n, sb, out, FLOOD);
		console.log(
			`n8n ${version}: a flood of ${FLOOD.jobs} at ${FLOOD.readLimit} reads/s, polls every ${FLOOD.everySeconds} s: last job reported after ${(flood.lastReportedMs / 1000).toFixed(1)} s; longest idle while captions remained ${(flood.idleMaxMs / 1000).toFixed(2)} s; worst report ${(flood.reportLagMs / 1000).toFixed(1)} s after the first poll; ${flood.listReads} list reads, ${flood.downloads} downloads (each once), ${flood.refused} answered 429; ${flood.polls.length} polls reported, each: ${describePolls(flood.polls)}`,
		);
		expect(flood.written.sort()).toEqual(flood.ids.map((id) => `${id}.srt`).sort());
		expect(flood.writtenOnce).toBe(true);
		expect(flood.downloads).toBe(FLOOD.jobs);
		expect(flood.reported).toBe(FLOOD.jobs);
	}, 420000);
});
