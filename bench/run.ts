// npm run bench [-- --json]: every figure measured beside its reference in the same run; one
// section a file under bench/figures/. BENCH_ONLY=<name>,<name> runs only those sections.
//   upload (1-2), batch (3), load (4), wait (5), concurrentUploads (6), binaryRepeat (7),
//   webhookBatch (8), triggerBurst (9), s3 (10), sharedKey (12), pollOverlap (13), crashBurst (14),
//   burst600 (15), pollingTrigger (16), forgedFlood (17); 9 and 12-15 run real n8n 2.41.1 (installed into the cache
//   if missing).
import { cpus } from 'node:os';

import { batch } from './figures/batch';
import { burst600 } from './figures/burst600';
import { crashBurst } from './figures/crashBurst';
import { forgedFlood } from './figures/forgedFlood';
import { binaryRepeat } from './figures/binaryRepeat';
import { concurrentUploads } from './figures/concurrentUploads';
import { load } from './figures/load';
import { pollOverlap } from './figures/pollOverlap';
import { pollingTrigger } from './figures/pollingTrigger';
import { s3 } from './figures/s3Orders';
import { sharedKey } from './figures/sharedKey';
import { triggerBurst } from './figures/triggerBurst';
import { upload } from './figures/upload';
import { wait } from './figures/wait';
import { webhookBatch } from './figures/webhookBatch';
import type { Row, Section } from './support';
import { log } from './support';

const sections: Section[] = [
	upload,
	batch,
	load,
	wait,
	concurrentUploads,
	binaryRepeat,
	webhookBatch,
	triggerBurst,
	s3,
	sharedKey,
	pollOverlap,
	crashBurst,
	burst600,
	pollingTrigger,
	forgedFlood,
];

async function main() {
	const started = Date.now();
	const only = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
	const unknown = only.filter((name) => !sections.some((s) => s.name === name));
	if (unknown.length)
		throw new Error(
			`BENCH_ONLY names no section ${unknown.join(', ')}; sections: ${sections.map((s) => s.name).join(', ')}`,
		);
	log(`machine: ${cpus().length} cores, Node ${process.version}`);
	const figures: Record<string, number> = {};
	const rows: Row[] = [];
	for (const section of sections.filter((s) => only.length === 0 || only.includes(s.name))) {
		log(section.title);
		try {
			const result = await section.run();
			Object.assign(figures, result.figures);
			rows.push(...result.rows);
		} catch (error) {
			// A section that fails is a row that misses; the other sections still report.
			log(`  FAILED: ${(error as Error).stack}`);
			rows.push([
				`section ${section.name}`,
				'failed',
				(error as Error).message.split('\n')[0],
				'',
				'runs to its end',
				false,
			]);
		}
	}
	const header = ['figure', 'measured', 'reference', 'ratio', 'target', 'met'];
	const table = [header, ...rows.map((r) => [...r.slice(0, 5), r[5] ? 'yes' : 'NO'] as string[])];
	const widths = header.map((_, c) => Math.max(...table.map((row) => row[c].length)));
	const lines = table.map(
		(row) => `| ${row.map((cell, c) => cell.padEnd(widths[c])).join(' | ')} |`,
	);
	lines.splice(1, 0, `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
	process.stdout.write(
		`\n${lines.join('\n')}\n\nmachine: ${cpus().length} cores, Node ${process.version}; ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
	);
	if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(figures)}\n`);
	process.exit(rows.some((r) => r[1] === 'failed') ? 1 : 0);
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).stack}\n`);
	process.exit(1);
});
