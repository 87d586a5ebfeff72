// npm run test:e2e: the e2e suites for each n8n version at once, one jest process per version (each
// n8n instance, sandbox and port is its own), so that the two cores are both in use. The package is
// packed once, before either starts (a pack builds dist/, which two packs at once would race on).
// Suites that are not per version (the scanner, the AI tool) run once, with the last version (1.x:
// its suites end sooner).
// Arguments go to jest (a path pattern picks suites); N8N_E2E_VERSIONS picks versions.
import { spawn } from 'node:child_process';
import path from 'node:path';

import { packPackage } from './instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const ONCE = ['scanner\\.test\\.ts$', 'agentTool\\.test\\.ts$'];
const root = path.join(__dirname, '..', '..');

async function runVersion(version: string, once: boolean, tgz: string): Promise<number> {
	const ignore = ['/node_modules/', 'queue\\.test\\.ts$', ...(once ? [] : ONCE)];
	const args = [
		path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
		'-c',
		'jest.e2e.config.js',
		'--runInBand',
		// Each test's time too: what a slow CI spends its minutes on.
		'--verbose',
		'--testPathIgnorePatterns',
		...ignore,
		'--',
		...process.argv.slice(2),
	];
	const started = Date.now();
	const child = spawn(process.execPath, args, {
		cwd: root,
		env: { ...process.env, N8N_E2E_VERSIONS: version, CAPTIONING_PACKAGE_TGZ: tgz },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const prefix = (chunk: Buffer, to: NodeJS.WriteStream) =>
		to.write(
			String(chunk)
				.split('\n')
				.filter((line, n, all) => line !== '' || n < all.length - 1)
				.map((line) => `[n8n ${version}] ${line}\n`)
				.join(''),
		);
	child.stdout.on('data', (chunk: Buffer) => prefix(chunk, process.stdout));
	child.stderr.on('data', (chunk: Buffer) => prefix(chunk, process.stderr));
	const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
	console.log(
		`[n8n ${version}] e2e suites ${code === 0 ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - started) / 1000)} s`,
	);
	return code;
}

void (async () => {
	const tgz = await packPackage();
	const codes = await Promise.all(
		VERSIONS.map(async (v, n) => await runVersion(v, n === VERSIONS.length - 1, tgz)),
	);
	process.exit(codes.every((c) => c === 0) ? 0 : 1);
})();
