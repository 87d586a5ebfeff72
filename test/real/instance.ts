// Real n8n for the e2e tests and the demo: installed into a cache folder (test/real/install-n8n.sh),
// this package packed and installed into ~/.n8n/nodes as users do, served over HTTPS with a
// self-signed certificate, driven through its CLI and REST API.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
	closeSync,
	mkdirSync,
	mkdtempSync,
	openSync,
	readFileSync,
	rmSync,
	statSync,
	writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';

import { tlsPair } from '../helpers/https';
import type { N8nInstall } from './install';
import { copyTemplate, userFolderTemplate } from './userFolder';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

export type { N8nInstall } from './install';
export { installN8n } from './install';

/**
 * Temp folders made here (n8n user folders with their database and binary store, the pack, CLI
 * inputs) and the n8n processes on them. Under jest they go after each test file, its n8n processes
 * stopped first; otherwise (the demo, the bench) when the process exits. Each run used to leave
 * about 70 MB per n8n in the temp folder.
 */
const made: string[] = [];
const running: N8nProcess[] = [];
/** Port reservations of this process (files, see freePort). */
const reserved: string[] = [];
const removeMade = () => {
	for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
	for (const file of reserved.splice(0)) rmSync(file, { force: true });
};
if (typeof afterAll === 'function') {
	afterAll(async () => {
		await Promise.all(running.splice(0).map(async (child) => await child.stop()));
		removeMade();
	}, 60000);
} else {
	process.once('exit', removeMade);
}
export const tempFolder = (prefix: string): string => {
	const dir = mkdtempSync(path.join(tmpdir(), prefix));
	made.push(dir);
	return dir;
};

let packed: string | undefined;

/**
 * `npm pack` of this package (its prepack builds it), once per process; the one
 * CAPTIONING_PACKAGE_TGZ names when set (test/real/eachVersion.ts packs once for every version).
 */
export async function packPackage(): Promise<string> {
	packed ??= process.env.CAPTIONING_PACKAGE_TGZ;
	if (packed) return packed;
	const out = tempFolder('captioning-pack-');
	const { stdout } = await run('npm', ['pack', '--pack-destination', out, '--silent'], {
		cwd: root,
		maxBuffer: 16 * 1024 * 1024,
	});
	packed = path.join(out, stdout.trim().split('\n').pop()!);
	return packed;
}

/**
 * Ports for n8n processes, Postgres and Redis, which bind them later, and an n8n main port that is
 * bound again after a kill or stop. A port the kernel hands out (listen on 0, then close) is free
 * for anyone again until that bind: another suite running at once (test/real/eachVersion.ts) asking
 * the kernel in that moment may be given the same one. So ports come from below the kernel's
 * ephemeral range (Linux: 32768-60999), which it never hands out, each reserved by a file in a
 * folder all processes share (created exclusively, holding the pid; removed when the test file or
 * process ends), and checked free with a listen.
 */
export async function freePort(): Promise<number> {
	const folder = path.join(tmpdir(), 'captioning-ports');
	mkdirSync(folder, { recursive: true });
	for (let tries = 0; tries < 200; tries++) {
		const port = 20000 + Math.floor(Math.random() * 12000);
		const file = path.join(folder, String(port));
		if (!reserve(file)) continue;
		if (await listens(port)) {
			reserved.push(file);
			return port;
		}
		rmSync(file, { force: true });
	}
	throw new Error('no free port between 20000 and 32000 after 200 tries');
}

/** Creates the reservation file; one left by a process that is gone an hour ago is taken over. */
function reserve(file: string): boolean {
	try {
		writeFileSync(file, String(process.pid), { flag: 'wx' });
		return true;
	} catch {
		try {
			const pid = Number(readFileSync(file, 'utf8'));
			const alive = (() => {
				try {
					process.kill(pid, 0);
					return true;
				} catch {
					return false;
				}
			})();
			if (alive || Date.now() - statSync(file).mtimeMs < 3600000) return false;
			rmSync(file, { force: true });
			writeFileSync(file, String(process.pid), { flag: 'wx' });
			return true;
		} catch {
			return false;
		}
	}
}

async function listens(port: number): Promise<boolean> {
	return await new Promise((resolve) => {
		const server = createServer();
		server.once('error', () => resolve(false));
		server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
	});
}

/** One n8n process of an instance (main, webhook or worker in queue mode). */
export interface N8nProcess {
	command: 'start' | 'webhook' | 'worker';
	/** Its HTTP port (workers: none that is used). */
	port: number;
	url: string;
	start(): Promise<void>;
	/** SIGTERM (n8n shuts down gracefully), SIGKILL after 20 s. */
	stop(): Promise<void>;
	/** SIGKILL at once: a crash (n8n saves nothing more). */
	kill(): Promise<void>;
	log(): string;
	/** Its process id while it runs (to read its memory in /proc). */
	pid(): number | undefined;
}

export interface N8n {
	install: N8nInstall;
	userFolder: string;
	port: number;
	/** https://127.0.0.1:<port> */
	url: string;
	/** Runs an n8n CLI command with this instance's environment. */
	cli(args: string[]): Promise<{ stdout: string; stderr: string }>;
	/**
	 * Credentials (n8n's export format, plain `data`) and workflows (files of one workflow or an
	 * array) to import: held until the next start or CLI run, then imported in one CLI run each,
	 * credentials first (each CLI run boots n8n's CLI, 10-20 s on 2 cores).
	 */
	importCredentials(credentials: object[]): void;
	importWorkflows(files: string[]): void;
	start(): Promise<void>;
	stop(): Promise<void>;
	/** Kills the main process (SIGKILL): a crash. */
	kill(): Promise<void>;
	/** A REST call as the owner (created on first use). */
	rest<T = unknown>(
		method: string,
		pathname: string,
		body?: unknown,
	): Promise<{ status: number; body: T }>;
	/** POSTs to a URL of this n8n (webhooks). */
	post(
		pathname: string,
		body: unknown,
	): Promise<{
		status: number;
		text: string;
		headers: Record<string, string | string[] | undefined>;
	}>;
	log(): string;
	/** Another process on the same user folder and database: `n8n webhook` or `n8n worker` in queue mode. */
	process(command: N8nProcess['command'], env?: NodeJS.ProcessEnv): Promise<N8nProcess>;
}

export const tls = new Agent({ connect: { ca: tlsPair().cert } });

/**
 * Prepares a fresh user folder with this package installed, ready to import and start.
 * `fileAccess`: folders Read/Write Files from Disk may use (besides the temp folder); `extraEnv`:
 * settings for every process and CLI run (a database, queue mode).
 */
export async function createN8n(
	install: N8nInstall,
	fileAccess: string[] = [],
	extraEnv: NodeJS.ProcessEnv = {},
): Promise<N8n> {
	const userFolder = tempFolder(`n8n-${install.version}-`);
	const tgz = await packPackage();
	// Not jest's environment: with NODE_ENV=test n8n runs in its own test mode and prints nothing.
	const { NODE_ENV: _nodeEnv, JEST_WORKER_ID: _worker, ...inherited } = process.env;
	const env: NodeJS.ProcessEnv = {
		...inherited,
		PATH: `${install.nodeBin}:${process.env.PATH}`,
		npm_config_yes: 'true',
	};

	const port = await freePort();
	const { keyPath, certPath } = tlsPair();
	const n8nEnv: NodeJS.ProcessEnv = {
		...env,
		N8N_USER_FOLDER: userFolder,
		N8N_PORT: String(port),
		N8N_HOST: '127.0.0.1',
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_PROTOCOL: 'https',
		N8N_SSL_KEY: keyPath,
		N8N_SSL_CERT: certPath,
		WEBHOOK_URL: `https://127.0.0.1:${port}/`,
		N8N_EDITOR_BASE_URL: `https://127.0.0.1:${port}/`,
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_RUNNERS_ENABLED: 'false',
		N8N_LOG_LEVEL: 'info',
		// Read/Write Files from Disk may only touch folders named here.
		N8N_RESTRICT_FILE_ACCESS_TO: [tmpdir(), ...fileAccess].join(';'),
		N8N_BLOCK_FILE_ACCESS_TO_N8N_FILES: 'false',
		EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'all',
		NODE_OPTIONS: '--max-old-space-size=2048',
		// Node 22 and later keep n8n's compiled modules for the next CLI run or start of this run's
		// n8n (Node 20 ignores it): each CLI run boots n8n.
		NODE_COMPILE_CACHE: path.join(path.dirname(tgz), `compile-cache-${install.version}`),
		...extraEnv,
	};
	// A database of its own (queue mode) gets the installed package only. The migrated SQLite
	// database is copied only where one pack serves many instances (test/real/eachVersion.ts): a
	// single instance would pay the template's CLI run on top of its own first one.
	const withDatabase =
		!extraEnv.DB_TYPE && !extraEnv.N8N_ENCRYPTION_KEY && !!process.env.CAPTIONING_PACKAGE_TGZ;
	copyTemplate(await userFolderTemplate(install, tgz, n8nEnv, withDatabase), userFolder);
	const bin = path.join(install.dir, 'node_modules', 'n8n', 'bin', 'n8n');
	let cookie = '';

	const spawnProcess = async (
		command: N8nProcess['command'],
		env: NodeJS.ProcessEnv = {},
	): Promise<N8nProcess> => {
		const own = command === 'start' ? port : Number(env.N8N_PORT ?? (await freePort()));
		const url = `https://127.0.0.1:${own}`;
		let child: ChildProcess | undefined;
		let output = '';
		const ready = async () => {
			if (command === 'worker') return /n8n worker is now ready/.test(output);
			if (command === 'webhook') return /Webhook listener waiting for requests/.test(output);
			// n8n 1.x answers /healthz before its REST routes exist: wait for those too.
			const res = await request(`${url}/rest/settings`, { dispatcher: tls });
			await res.body.text();
			return res.statusCode === 200;
		};
		const spawned: N8nProcess = {
			command,
			port: own,
			url,
			async start() {
				// Each n8n process starts a task broker: every process needs a port of its own.
				const processEnv = {
					...n8nEnv,
					N8N_PORT: String(own),
					N8N_RUNNERS_BROKER_PORT: String(await freePort()),
					...env,
				};
				output = '';
				child = spawn(path.join(install.nodeBin, 'node'), [bin, command], {
					env: processEnv,
					stdio: ['ignore', 'pipe', 'pipe'],
				});
				child.stdout!.on('data', (d) => (output += String(d)));
				child.stderr!.on('data', (d) => (output += String(d)));
				const deadline = Date.now() + 180000;
				for (;;) {
					if (child.exitCode !== null)
						throw new Error(`n8n ${command} exited (${child.exitCode}):\n${output.slice(-4000)}`);
					try {
						if (await ready()) return;
					} catch {
						// not listening yet
					}
					if (Date.now() > deadline)
						throw new Error(`n8n ${command} did not become ready:\n${output.slice(-4000)}`);
					await new Promise((r) => setTimeout(r, 500));
				}
			},
			async stop() {
				if (!child || child.exitCode !== null || child.signalCode !== null) return;
				const exited = new Promise((r) => child!.once('exit', r));
				child.kill('SIGTERM');
				const timer = setTimeout(() => child!.kill('SIGKILL'), 20000);
				await exited;
				clearTimeout(timer);
			},
			async kill() {
				if (!child || child.exitCode !== null || child.signalCode !== null) return;
				const exited = new Promise((r) => child!.once('exit', r));
				child.kill('SIGKILL');
				await exited;
			},
			log: () => output,
			pid: () => (child && child.exitCode === null ? child.pid : undefined),
		};
		running.push(spawned);
		return spawned;
	};
	const main = await spawnProcess('start');
	const pending = { credentials: [] as object[], workflows: [] as unknown[] };
	const flushImports = async () => {
		const { credentials, workflows } = pending;
		pending.credentials = [];
		pending.workflows = [];
		if (credentials.length > 0)
			await instance.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', credentials)}`,
			]);
		if (workflows.length > 0)
			await instance.cli(['import:workflow', `--input=${tempJson('workflows.json', workflows)}`]);
	};

	const instance: N8n = {
		install,
		userFolder,
		port,
		url: `https://127.0.0.1:${port}`,
		async cli(args) {
			if (!args[0].startsWith('import:')) await flushImports();
			// Each n8n process starts a task broker: a CLI run beside the server needs a port of its own.
			const env = { ...n8nEnv, N8N_RUNNERS_BROKER_PORT: String(await freePort()) };
			// Its output goes to a file: n8n 1.122.5 exits before a pipe has taken a large output (an
			// execution with a file inline was cut at the pipe's 64 KiB).
			const out = path.join(
				userFolder,
				`cli-${Date.now()}-${Math.random().toString(36).slice(2)}.out`,
			);
			const fd = openSync(out, 'w');
			try {
				const child = spawn(path.join(install.nodeBin, 'node'), [bin, ...args], {
					env,
					stdio: ['ignore', fd, 'pipe'],
				});
				let stderr = '';
				child.stderr?.on(
					'data',
					(d: Buffer) => (stderr = (stderr + d.toString()).slice(-64 * 1024)),
				);
				const killer = setTimeout(() => child.kill('SIGKILL'), 10 * 60 * 1000);
				const [code, signal] = await new Promise<[number | null, string | null]>(
					(resolve, reject) => {
						child.on('error', reject);
						child.on('close', (c, s) => resolve([c, s]));
					},
				).finally(() => clearTimeout(killer));
				const stdout = readFileSync(out, 'utf8');
				if (code !== 0)
					throw new Error(
						`n8n ${args[0]} failed: exit code ${code}, signal ${signal}\n${stdout.slice(-3000)}\n${stderr.slice(-2000)}`,
					);
				return { stdout, stderr };
			} finally {
				closeSync(fd);
				rmSync(out, { force: true });
			}
		},
		importCredentials(credentials) {
			pending.credentials.push(...credentials);
		},
		importWorkflows(files) {
			for (const file of files)
				pending.workflows.push(...[JSON.parse(readFileSync(file, 'utf8')) as unknown].flat());
		},
		async start() {
			await flushImports();
			await main.start();
		},
		stop: async () => await main.stop(),
		kill: async () => await main.kill(),
		async rest<T>(method: string, pathname: string, body?: unknown) {
			if (!cookie) {
				const owner = {
					email: 'owner@example.com',
					firstName: 'Test',
					lastName: 'Owner',
					password: 'Passw0rd-for-e2e',
				};
				const answers: string[] = [];
				const post = async (route: string, body: object) => {
					const r = await request(`${instance.url}/rest${route}`, {
						method: 'POST',
						dispatcher: tls,
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify(body),
					});
					answers.push(`${route} ${r.statusCode} ${(await r.body.text()).slice(0, 200)}`);
					return ([] as string[])
						.concat(r.headers['set-cookie'] ?? [])
						.map((c) => c.split(';')[0])
						.join('; ');
				};
				// n8n mounts its REST routes in stages after it says it is ready (404), and under load on
				// 2 cores 2.41.1 answers 503 "Database is not ready!" for a while: set up the owner, or
				// (already set up, or auth not yet in place) log in, until either gives a session.
				const deadline = Date.now() + 120000;
				while (!cookie && Date.now() < deadline) {
					cookie = await post('/owner/setup', owner);
					if (!cookie && !/^\S+ (404|5\d\d) /.test(answers.at(-1)!))
						cookie = await post('/login', {
							emailOrLdapLoginId: owner.email,
							email: owner.email,
							password: owner.password,
						});
					if (!cookie) await new Promise((r) => setTimeout(r, 500));
				}
				if (!cookie)
					throw new Error(
						`could not log in to n8n; its last answers:\n${answers.slice(-6).join('\n')}`,
					);
			}
			const send = async () => {
				const r = await request(`${instance.url}/rest${pathname}`, {
					method: method as 'GET',
					dispatcher: tls,
					headers: { cookie, 'content-type': 'application/json', 'browser-id': 'e2e' },
					body: body === undefined ? undefined : JSON.stringify(body),
				});
				return { res: r, text: await r.body.text() };
			};
			// Ask again while n8n cannot answer yet, never read that as an answer:
			// - right after a start, n8n 1.x answers /rest/settings and /login before it has mounted every
			//   controller: Express's own "Cannot PATCH /rest/…" page (30 s);
			// - 2.41.1 answers every request 503 "Database is not ready!" while its database check fails,
			//   for minutes under a burst on 2 cores (CONTRIBUTING, n8n's faults): an execution count or
			//   an execution read then is not 0 nor missing (5 minutes).
			const unmounted = (r: { res: { statusCode: number }; text: string }) =>
				r.res.statusCode === 404 && r.text.includes(`Cannot ${method.toUpperCase()} /rest`);
			const started = Date.now();
			let sent = await send();
			while (
				(unmounted(sent) && Date.now() < started + 30000) ||
				(sent.res.statusCode === 503 && Date.now() < started + 300000)
			) {
				await new Promise((r) => setTimeout(r, 500));
				sent = await send();
			}
			const { res, text } = sent;
			let parsed: unknown = text;
			try {
				parsed = JSON.parse(text);
			} catch {
				// not JSON
			}
			const data = (parsed as { data?: unknown })?.data ?? parsed;
			return { status: res.statusCode, body: data as T };
		},
		async post(pathname, body) {
			const res = await request(`${instance.url}${pathname}`, {
				method: 'POST',
				dispatcher: tls,
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify(body),
			});
			return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
		},
		log: () => main.log(),
		async process(command, env) {
			return await spawnProcess(command, env);
		},
	};
	return instance;
}

/** Writes JSON to a temp file (for the CLI's --input). */
export function tempJson(name: string, value: unknown): string {
	const dir = tempFolder('n8n-input-');
	const file = path.join(dir, name);
	writeFileSync(file, JSON.stringify(value, null, 2));
	return file;
}
