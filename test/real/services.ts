// Postgres 15 and Redis 7 for n8n's queue mode, from Debian's packages (installed when missing;
// root can apt-get here and in CI), each on a port and in a folder of its own, stopped at the end.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { freePort, tempFolder } from './instance';

const run = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface Service {
	port: number;
	stop(): Promise<void>;
	log(): string;
}

/** Installs Debian's postgresql-15 and redis-server unless both are there. */
export async function ensurePackages(): Promise<void> {
	if (existsSync(path.join(PG_BIN, 'postgres')) && existsSync('/usr/bin/redis-server')) return;
	const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
	await run('apt-get', ['update', '-qq'], {
		env,
		timeout: 10 * 60 * 1000,
		maxBuffer: 64 * 1024 * 1024,
	});
	await run(
		'apt-get',
		['install', '-y', '-qq', '--no-install-recommends', 'postgresql-15', 'redis-server'],
		{ env, timeout: 15 * 60 * 1000, maxBuffer: 64 * 1024 * 1024 },
	);
}

function supervise(
	child: ChildProcess,
	signal: NodeJS.Signals,
): Service & { output: () => string } {
	let output = '';
	child.stdout?.on('data', (d) => (output += String(d)));
	child.stderr?.on('data', (d) => (output += String(d)));
	return {
		port: 0,
		output: () => output,
		log: () => output,
		async stop() {
			if (child.exitCode !== null || child.signalCode !== null) return;
			const exited = new Promise((r) => child.once('exit', r));
			child.kill(signal);
			const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
			await exited;
			clearTimeout(timer);
		},
	};
}

async function waitUntil(
	check: () => Promise<boolean>,
	what: string,
	log: () => string,
): Promise<void> {
	const deadline = Date.now() + 60000;
	while (!(await check().catch(() => false))) {
		if (Date.now() > deadline) throw new Error(`${what} did not start:\n${log().slice(-3000)}`);
		await new Promise((r) => setTimeout(r, 300));
	}
}

/**
 * A fresh Postgres cluster (trust auth on 127.0.0.1) with database `n8n` owned by user `n8n`.
 */
export async function startPostgres(): Promise<Service> {
	const dir = tempFolder('pg-');
	chmodSync(dir, 0o777);
	const data = path.join(dir, 'data');
	// As root, run as the `postgres` user (Postgres refuses root) and signal it directly at the end.
	const user = process.getuid?.() === 0 ? await postgresUser() : {};
	await run(path.join(PG_BIN, 'initdb'), ['-D', data, '-U', 'n8n', '-A', 'trust', '--no-sync'], {
		...user,
		cwd: dir,
		maxBuffer: 16 * 1024 * 1024,
	});
	const port = await freePort();
	// Small and fast: no fsync (a test database), socket in our own folder.
	const args = [
		'-D',
		data,
		'-p',
		String(port),
		'-h',
		'127.0.0.1',
		'-k',
		dir,
		'-c',
		'fsync=off',
		'-c',
		'synchronous_commit=off',
		'-c',
		'full_page_writes=off',
		'-c',
		'max_connections=200',
	];
	const service = supervise(
		spawn(path.join(PG_BIN, 'postgres'), args, {
			...user,
			cwd: dir,
			stdio: ['ignore', 'pipe', 'pipe'],
		}),
		'SIGINT',
	);
	await waitUntil(
		async () => {
			await run(path.join(PG_BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]);
			return true;
		},
		'Postgres',
		service.log,
	);
	await run(path.join(PG_BIN, 'createdb'), [
		'-h',
		'127.0.0.1',
		'-p',
		String(port),
		'-U',
		'n8n',
		'n8n',
	]);
	return { ...service, port };
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
	const [uid, gid] = await Promise.all([
		run('id', ['-u', 'postgres']),
		run('id', ['-g', 'postgres']),
	]);
	return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Redis without persistence. */
export async function startRedis(): Promise<Service> {
	const port = await freePort();
	const dir = tempFolder('redis-');
	const child = spawn(
		'/usr/bin/redis-server',
		[
			'--port',
			String(port),
			'--bind',
			'127.0.0.1',
			'--save',
			'',
			'--appendonly',
			'no',
			'--dir',
			dir,
		],
		{ stdio: ['ignore', 'pipe', 'pipe'] },
	);
	const service = supervise(child, 'SIGTERM');
	await waitUntil(
		async () => /Ready to accept connections/.test(service.output()),
		'Redis',
		service.log,
	);
	return { ...service, port };
}
