// What every fresh n8n user folder of a run starts from, made once per n8n version and copied into
// each instance's folder: this package npm-installed into .n8n/nodes as users install it, and (on
// SQLite) the database and encryption key that n8n's first CLI run writes and migrates. Each suite
// used to pay for both itself: an npm install and a CLI run that migrated an empty database.
import { execFile, spawn } from 'node:child_process';
import {
	cpSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	renameSync,
	rmSync,
	writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import type { N8nInstall } from './install';

const run = promisify(execFile);

/** Runs an n8n CLI command to its end; its output is kept for the error. */
async function cliRun(install: N8nInstall, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
	const bin = path.join(install.dir, 'node_modules', 'n8n', 'bin', 'n8n');
	const child = spawn(path.join(install.nodeBin, 'node'), [bin, ...args], {
		env,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let output = '';
	child.stdout.on('data', (d) => (output = (output + String(d)).slice(-8000)));
	child.stderr.on('data', (d) => (output = (output + String(d)).slice(-8000)));
	const code = await new Promise<number | null>((resolve, reject) => {
		child.on('error', reject);
		child.on('close', resolve);
	});
	if (code !== 0) throw new Error(`n8n ${args[0]} failed (exit ${code}):\n${output}`);
}

/**
 * The template folder of this n8n version for the package `tgz`, beside it (the pack's folder goes
 * when the run ends). `env`: the environment of the instance's processes; `withDatabase` false for
 * an instance on another database (Postgres), which gets the installed package only.
 */
export async function userFolderTemplate(
	install: N8nInstall,
	tgz: string,
	env: NodeJS.ProcessEnv,
	withDatabase: boolean,
): Promise<string> {
	const template = path.join(
		path.dirname(tgz),
		`user-folder-${install.version}${withDatabase ? '' : '-nodes'}`,
	);
	// Suites of one version run at once (test/real/eachVersion.ts): one makes the template, holding
	// a lock folder; the others wait for it.
	const lock = `${template}.lock`;
	const deadline = Date.now() + 10 * 60 * 1000;
	for (;;) {
		if (existsSync(template)) return template;
		try {
			mkdirSync(lock);
			break;
		} catch {
			if (Date.now() > deadline) throw new Error(`${lock} held for 10 minutes`);
			await new Promise((r) => setTimeout(r, 500));
		}
	}
	try {
		if (!existsSync(template)) await makeTemplate(install, tgz, env, withDatabase, template);
	} finally {
		rmSync(lock, { recursive: true, force: true });
	}
	return template;
}

async function makeTemplate(
	install: N8nInstall,
	tgz: string,
	env: NodeJS.ProcessEnv,
	withDatabase: boolean,
	template: string,
): Promise<void> {
	// Made aside and renamed when whole: an interrupted run leaves no half template.
	const making = mkdtempSync(`${template}.making-`);
	const nodesDir = path.join(making, '.n8n', 'nodes');
	mkdirSync(nodesDir, { recursive: true });
	writeFileSync(
		path.join(nodesDir, 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }),
	);
	// As n8n's community-node installer does: --legacy-peer-deps keeps npm from pulling n8n-workflow.
	await run(
		'npm',
		['install', tgz, '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund'],
		{ cwd: nodesDir, env, maxBuffer: 16 * 1024 * 1024 },
	);
	// Any CLI run creates the database, migrates it and writes the encryption key to .n8n/config.
	if (withDatabase) await cliRun(install, ['list:workflow'], { ...env, N8N_USER_FOLDER: making });
	renameSync(making, template);
}

/**
 * The template copied into the instance's user folder (which exists, empty): the installed package,
 * the encryption key and the database only, not the logs of the template's CLI run.
 */
export function copyTemplate(template: string, userFolder: string): void {
	const from = path.join(template, '.n8n');
	for (const name of readdirSync(from).filter(
		(n) => n === 'nodes' || n === 'config' || n.startsWith('database.sqlite'),
	))
		cpSync(path.join(from, name), path.join(userFolder, '.n8n', name), { recursive: true });
}
