// npm run test:e2e: the e2e suites for each n8n version, each suite file a jest process of its own,
// N8N_E2E_SLOTS of them at once (default 3): most of a suite's time is waiting (for polls, the
// sender, a Timeout, an execution time limit), so three keep the two cores busy where one process
// per version left them half idle. The suites that load n8n (bursts, kills, floods, a concurrency
// limit) go first, two at most at once (as when each version had a process) and never the same
// suite of both versions together (two bursts at once answered 7 times slower), then the longest.
// Each suite has its own n8n instance, sandbox and ports. The package is packed once, before any
// starts (a pack builds dist/, which two packs at once would race on), and each version installed
// (test/real/install-n8n.sh: one install of a folder at a time). Suites that are not per
// version (the scanner, the AI tool) run once, with the last version; the templates' suite once,
// with the newest. Prints each suite's time and CPU time at the end.
// Arguments go to jest (a path pattern picks suites); N8N_E2E_VERSIONS picks versions;
// E2E_JSON_DIR: a folder for jest's JSON result of each suite (.ci/run sums them up).
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { installN8n } from './install';
import { packPackage } from './instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const SLOTS = Math.max(1, Number(process.env.N8N_E2E_SLOTS ?? 3));
const ONCE = ['scanner.test.ts', 'agentTool.test.ts'];
/** Suites run once, with the newest version (the one users install today). */
const NEWEST = ['templates.test.ts'];
const newest = [...VERSIONS].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
/** Suites that load n8n: two at most at once, so that each runs at a size 2 cores answer in time. */
const MAX_LOADS = 2;
const LOADS = [
	'burst.test.ts',
	'killedMidRun.test.ts',
	'flood.test.ts',
	'concurrencyLimit.test.ts',
];
/** About how long each suite takes alone (s, 2 cores): the longest start first. */
const SECONDS: Record<string, number> = {
	'workspaceLife.test.ts': 420,
	'e2e.test.ts': 200,
	'pollingLag.test.ts': 210,
	'payOnceAcrossExecutions.test.ts': 140,
	'durableWaits.test.ts': 135,
	'concurrencyLimit.test.ts': 130,
	'killedMidRun.test.ts': 125,
	'repeats.test.ts': 100,
	'burst.test.ts': 90,
	'flood.test.ts': 75,
	'templates.test.ts': 70,
	'networkFaults.test.ts': 60,
	's3Objects.test.ts': 50,
	'scanner.test.ts': 30,
	'agentTool.test.ts': 15,
};
const root = path.join(__dirname, '..', '..');
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const args = process.argv.slice(2);

interface Suite {
	version: string;
	file: string;
	name: string;
	load: boolean;
}
interface Result extends Suite {
	code: number;
	startedS: number;
	seconds: number;
	cpuSeconds?: number;
}

async function listSuites(): Promise<string[]> {
	const { stdout } = await promisify(execFile)(
		process.execPath,
		[jest, '-c', 'jest.e2e.config.js', '--listTests', ...args],
		{ cwd: root, maxBuffer: 16 * 1024 * 1024 },
	);
	return stdout.split('\n').filter((line) => line.endsWith('.ts'));
}

async function runSuite(suite: Suite, tgz: string, started: number): Promise<Result> {
	const json = process.env.E2E_JSON_DIR
		? [
				'--json',
				`--outputFile=${path.join(process.env.E2E_JSON_DIR, `e2e-${suite.version}-${suite.name}.json`)}`,
			]
		: [];
	const begun = Date.now();
	// The CPU time of the suite with its n8n processes (GNU time, where there is one).
	const cpuFile = path.join(path.dirname(tgz), `cpu-${suite.version}-${suite.name}`);
	const timed = existsSync('/usr/bin/time') ? ['-o', cpuFile, '-f', '%U %S', process.execPath] : [];
	const child = spawn(
		timed.length ? '/usr/bin/time' : process.execPath,
		[
			// Each test's time too (what a slow CI spends its minutes on); the suite last, by path (a
			// pattern among the arguments picked it already).
			...timed,
			jest,
			'-c',
			'jest.e2e.config.js',
			'--runInBand',
			'--verbose',
			...json,
			...args,
			'--runTestsByPath',
			suite.file,
		],
		{
			cwd: root,
			env: { ...process.env, N8N_E2E_VERSIONS: suite.version, CAPTIONING_PACKAGE_TGZ: tgz },
			stdio: ['ignore', 'pipe', 'pipe'],
		},
	);
	const tag = `[n8n ${suite.version} ${suite.name.replace(/\.test\.ts$/, '')}]`;
	const prefix = (chunk: Buffer, to: NodeJS.WriteStream) =>
		to.write(
			String(chunk)
				.split('\n')
				.filter((line, n, all) => line !== '' || n < all.length - 1)
				.map((line) => `${tag} ${line}\n`)
				.join(''),
		);
	child.stdout.on('data', (chunk: Buffer) => prefix(chunk, process.stdout));
	child.stderr.on('data', (chunk: Buffer) => prefix(chunk, process.stderr));
	const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
	const seconds = Math.round((Date.now() - begun) / 1000);
	let cpuSeconds: number | undefined;
	try {
		const [user, system] = readFileSync(cpuFile, 'utf8').trim().split('\n').pop()!.split(' ');
		cpuSeconds = Math.round(Number(user) + Number(system));
	} catch {
		// no GNU time here
	}
	console.log(`${tag} ${code === 0 ? 'passed' : 'FAILED'} in ${seconds} s`);
	return { ...suite, code, seconds, cpuSeconds, startedS: Math.round((begun - started) / 1000) };
}

void (async () => {
	const started = Date.now();
	const tgz = await packPackage();
	// Outside the suites' time limits: minutes on a fresh machine, instant after.
	await Promise.all(VERSIONS.map((version) => installN8n(version, console.log)));
	const files = await listSuites();
	const queue: Suite[] = VERSIONS.flatMap((version, n) =>
		files
			.map((file) => ({ version, file, name: path.basename(file) }))
			.filter(({ name }) => n === VERSIONS.length - 1 || !ONCE.includes(name))
			.filter(({ name }) => version === newest || !NEWEST.includes(name))
			.map((suite) => ({ ...suite, load: LOADS.includes(suite.name) })),
	).sort((a, b) => (SECONDS[b.name] ?? 100) - (SECONDS[a.name] ?? 100));
	const results: Result[] = [];
	/** The n8n-loading suites running: two at most, never the same suite of both versions at once. */
	const loading: string[] = [];
	const waiting: Array<() => void> = [];
	const lane = async () => {
		for (;;) {
			// A suite that loads n8n while fewer than two run (they make the longest chain), else the longest.
			const load =
				loading.length < MAX_LOADS
					? queue.findIndex((suite) => suite.load && !loading.includes(suite.name))
					: -1;
			const next = load >= 0 ? load : queue.findIndex((suite) => !suite.load);
			if (next < 0) {
				if (queue.length === 0) return;
				// Only suites that load n8n are left, none of which may start now: wait for one to end.
				await new Promise<void>((resolve) => waiting.push(resolve));
				continue;
			}
			const [suite] = queue.splice(next, 1);
			if (suite.load) loading.push(suite.name);
			try {
				results.push(await runSuite(suite, tgz, started));
			} finally {
				if (suite.load) loading.splice(loading.indexOf(suite.name), 1);
				for (const resolve of waiting.splice(0)) resolve();
			}
		}
	};
	await Promise.all(Array.from({ length: SLOTS }, lane));
	const failed = results.filter((r) => r.code !== 0);
	console.log(
		`=== e2e suites: ${results.length - failed.length} of ${results.length} passed in ${Math.round((Date.now() - started) / 1000)} s (${SLOTS} at once); each suite: started at, took, CPU (s) ===`,
	);
	for (const r of results.sort((a, b) => a.startedS - b.startedS))
		console.log(
			`${[r.startedS, r.seconds, r.cpuSeconds ?? '?'].map((n) => String(n).padStart(5)).join(' ')}  ${r.version.padEnd(8)} ${r.name}${r.code === 0 ? '' : '  FAILED'}`,
		);
	process.exit(failed.length === 0 ? 0 : 1);
})();
