// 4. The time to require and construct the compiled nodes and credentials, on top of n8n-workflow.
import path from 'node:path';

import type { Section } from '../support';
import { median, root, round, run } from '../support';

async function measure() {
	const pkg = require(path.join(root, 'package.json')) as {
		n8n: { nodes: string[]; credentials: string[] };
	};
	const files = [...pkg.n8n.credentials, ...pkg.n8n.nodes].map((f) => path.join(root, f));
	// What n8n does at start for a community package: require each file and construct its class.
	const script = `
		const { performance } = require('node:perf_hooks');
		const t0 = performance.now();
		require('n8n-workflow');
		const t1 = performance.now();
		for (const f of ${JSON.stringify(files)}) { const m = require(f); for (const C of Object.values(m)) new C(); }
		const t2 = performance.now();
		process.stdout.write(JSON.stringify({ workflow: t1 - t0, ours: t2 - t1 }));`;
	const workflow: number[] = [];
	const ours: number[] = [];
	for (let i = 0; i < 15; i++) {
		const { stdout } = await run(process.execPath, ['-e', script], { cwd: root });
		const r = JSON.parse(stdout) as { workflow: number; ours: number };
		workflow.push(r.workflow);
		ours.push(r.ours);
	}
	return { workflowMs: median(workflow), loadMs: median(ours) };
}

export const load: Section = {
	name: 'load',
	title: '4. load cost',
	async run() {
		const l = await measure();
		const figures = { loadMs: round(l.loadMs, 1) };
		return {
			figures,
			rows: [
				[
					'load cost on top of n8n-workflow',
					`${l.loadMs.toFixed(1)} ms`,
					`n8n-workflow ${l.workflowMs.toFixed(0)} ms`,
					'',
					'≤ 30 ms',
					l.loadMs <= 30,
				],
			],
		};
	},
};
