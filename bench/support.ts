// What the bench's sections share: logging, medians, the sandbox in a process of its own, and the
// shape of a section's result (its figures for --json, its rows for the table).
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const root = path.resolve(__dirname, '..');
export const log = (line: string) => process.stderr.write(`${line}\n`);
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const p95 = (xs: number[]) =>
	[...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(0.95 * xs.length) - 1)];
export const round = (x: number, digits = 2) => Number(x.toFixed(digits));

/** One line of the table: figure, measured, reference, ratio, target, met. */
export type Row = [string, string, string, string, string, boolean];

export interface SectionResult {
	/** The `--json` keys of this section, in order. */
	figures: Record<string, number>;
	rows: Row[];
}

export interface Section {
	/** What BENCH_ONLY names it by. */
	name: string;
	/** What the log says before it runs. */
	title: string;
	run(): Promise<SectionResult>;
}

/** The sandbox in its own process, so the bench process's memory is the node's alone. */
export async function sandboxProcess(latencyMs = 0): Promise<{
	baseUrl: string;
	keys: { full: string; otherWorkspace: string };
	stop: () => void;
}> {
	const child = spawn(
		process.execPath,
		[
			path.join(root, 'sandbox/cli.js'),
			'--port',
			'0',
			'--storage-port',
			'0',
			'--latency-ms',
			String(latencyMs),
		],
		{ stdio: ['ignore', 'pipe', 'inherit'] },
	);
	let out = '';
	for await (const chunk of child.stdout) {
		out += String(chunk);
		const base = /Base URL:\s+(\S+)/.exec(out);
		const key = /API key \(full\):\s+(\S+)/.exec(out);
		const other = /Other workspace:\s+(\S+)/.exec(out);
		if (base && key && other)
			return {
				baseUrl: base[1],
				keys: { full: key[1], otherWorkspace: other[1] },
				stop: () => child.kill(),
			};
	}
	throw new Error(`sandbox did not start: ${out}`);
}

/** Samples the process's RSS every 10 ms while `work` runs; the peak growth in MiB. */
export async function peakRssGrowth<T>(
	work: () => Promise<T>,
): Promise<{ result: T; rssGrowthMiB: number }> {
	const baseline = process.memoryUsage.rss();
	let peak = baseline;
	// rss() alone: the full memoryUsage() walks the heap and would slow what it measures.
	const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
	try {
		const result = await work();
		return { result, rssGrowthMiB: (peak - baseline) / 1024 ** 2 };
	} finally {
		clearInterval(sampler);
	}
}
