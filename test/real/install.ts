// n8n of a version, installed into a cache folder by test/real/install-n8n.sh (minutes the first
// time, instant after), for the e2e suites, the bench and the demo.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface N8nInstall {
	version: string;
	dir: string;
	/** The folder holding the node binary this n8n runs on. */
	nodeBin: string;
}

/**
 * Installs (or finds in the cache) n8n of a version; minutes the first time, instant after. With
 * `progress`, says every 10 s how long it has taken and how many packages npm has fetched, and
 * passes on npm's errors and its closing lines, so a first run never looks hung. npm's warnings
 * (dozens of ERESOLVE peer-dependency notes from n8n's own tree, harmless) are counted, not shown.
 */
export async function installN8n(
	version: string,
	progress?: (line: string) => void,
): Promise<N8nInstall> {
	const script = path.join(__dirname, 'install-n8n.sh');
	let stdout: string;
	if (!progress) {
		stdout = (
			await run('bash', [script, version], { maxBuffer: 64 * 1024 * 1024, timeout: 30 * 60 * 1000 })
		).stdout;
	} else {
		stdout = await new Promise<string>((resolve, reject) => {
			const child = spawn('bash', [script, version], {
				env: { ...process.env, npm_config_loglevel: 'http' },
				stdio: ['ignore', 'pipe', 'pipe'],
			});
			const started = Date.now();
			let out = '';
			let fetched = 0;
			let warnings = 0;
			let pending = '';
			const elapsed = () => {
				const seconds = Math.round((Date.now() - started) / 1000);
				return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
			};
			let lastFetched = -1;
			// Once every package is fetched npm unpacks and links them for minutes without a word.
			const timer = setInterval(() => {
				progress(
					fetched > 0 && fetched === lastFetched
						? `  installing n8n ${version}: ${elapsed()}, ${fetched} packages fetched, npm is unpacking them…`
						: `  installing n8n ${version}: ${elapsed()}, ${fetched} packages fetched so far…`,
				);
				lastFetched = fetched;
			}, 10000);
			child.stdout.on('data', (d) => (out += String(d)));
			child.stderr.on('data', (d) => {
				pending += String(d);
				const lines = pending.split('\n');
				pending = lines.pop()!;
				for (const line of lines) {
					if (/npm http fetch/.test(line)) fetched += 1;
					else if (/^npm warn/.test(line)) warnings += 1;
					else if (/^(added|changed|rebuilt|npm error)/.test(line)) progress(`  npm: ${line}`);
				}
			});
			child.on('error', reject);
			child.on('close', (code) => {
				clearInterval(timer);
				if (code === 0) {
					const hidden =
						warnings > 0
							? ` (npm printed ${warnings} warnings about n8n's own dependencies, not shown: they are expected)`
							: '';
					progress(`  n8n ${version} ready after ${elapsed()}${hidden}`);
					resolve(out);
				} else {
					reject(new Error(`installing n8n ${version} failed (exit ${code})`));
				}
			});
		});
	}
	const dir = stdout.trim().split('\n').pop()!;
	return { version, dir, nodeBin: readFileSync(path.join(dir, '.node-bin'), 'utf8').trim() };
}
