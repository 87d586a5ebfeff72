// n8n in queue mode (test/e2e/queue.test.ts, test/real/queueBinary.ts): Postgres 15 and Redis 7 from
// Debian's packages, a main process with production webhooks off, webhook processes (HTTPS) and
// workers.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { request } from 'undici';

import type { N8n, N8nInstall, N8nProcess } from './instance';
import { createN8n, freePort, tempJson, tls } from './instance';
import type { Service } from './services';
import { ensurePackages, startPostgres, startRedis } from './services';

export interface QueueCluster {
	n8n: N8n;
	pg: Service;
	redis: Service;
	hooks: N8nProcess[];
	workers: N8nProcess[];
	/** Runs SQL in n8n's database (psql), its output unaligned, tuples only. */
	sql(query: string): Promise<string>;
	/** Which workers ran (or resumed) an execution, from n8n's own log line. */
	ranOn(executionId: string): N8nProcess[];
	/** The processes' last log lines (n8n's environment dump left out). */
	logs(): string;
	stop(): Promise<void>;
}

export interface QueueClusterOptions {
	install: N8nInstall;
	/** Folders Read/Write Files from Disk may use. */
	fileAccess?: string[];
	/** Settings for every process (beside the queue-mode ones). */
	env?: NodeJS.ProcessEnv;
	webhookProcesses?: number;
	workers?: number;
	/** n8n's credential import format (id, name, type, data). */
	credentials: object[];
	/**
	 * Workflow files (each with its id) to import and publish before the processes start, given the
	 * first webhook process's address (the one n8n hands out in webhook URLs).
	 */
	workflows: (webhookBase: string) => Array<[id: string, file: string]>;
}

/**
 * Starts Postgres, Redis and the n8n processes; the workflows are imported and published first, so
 * the webhook processes serve them once main has activated them (wait for that with a webhook call).
 */
export async function startQueueCluster(options: QueueClusterOptions): Promise<QueueCluster> {
	await ensurePackages();
	const [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
	const hookPorts = await Promise.all(
		Array.from({ length: options.webhookProcesses ?? 1 }, async () => await freePort()),
	);
	let hooks: N8nProcess[] = [];
	let workers: N8nProcess[] = [];
	let n8n: N8n | undefined;
	const stop = async () => {
		await Promise.all([...workers, ...hooks].map(async (p) => await p.stop()));
		await n8n?.stop();
		await Promise.all([pg.stop(), redis.stop()]);
	};
	try {
		n8n = await createN8n(options.install, options.fileAccess ?? [], {
			DB_TYPE: 'postgresdb',
			DB_POSTGRESDB_HOST: '127.0.0.1',
			DB_POSTGRESDB_PORT: String(pg.port),
			DB_POSTGRESDB_DATABASE: 'n8n',
			DB_POSTGRESDB_USER: 'n8n',
			DB_POSTGRESDB_PASSWORD: '',
			EXECUTIONS_MODE: 'queue',
			QUEUE_BULL_REDIS_HOST: '127.0.0.1',
			QUEUE_BULL_REDIS_PORT: String(redis.port),
			// Production webhooks only on the webhook processes; the URLs n8n hands out point at the first.
			N8N_DISABLE_PRODUCTION_MAIN_PROCESS: 'true',
			WEBHOOK_URL: `https://127.0.0.1:${hookPorts[0]}/`,
			N8N_ENCRYPTION_KEY: 'queue-mode-bench-encryption-key',
			...options.env,
		});
		// The first CLI run creates n8n's tables in Postgres; the processes start on a ready database.
		await n8n.cli([
			'import:credentials',
			`--input=${tempJson('credentials.json', options.credentials)}`,
		]);
		const workflows = options.workflows(`https://127.0.0.1:${hookPorts[0]}`);
		// Imported in one CLI run (a CLI run each boots n8n; the CLI's --activeState=fromJson, tried
		// here, left every webhook unregistered), then published in one SQL statement: what
		// `n8n publish:workflow --id=<id>` does (WorkflowRepository.publishVersion: a workflow that is
		// not archived and has a history row of its current version gets active and that version),
		// without a CLI boot per workflow (about 10 s each on 2 cores).
		const all = workflows.flatMap(([, file]) =>
			[JSON.parse(readFileSync(file, 'utf8')) as unknown].flat(),
		);
		await n8n.cli(['import:workflow', `--input=${tempJson('workflows.json', all)}`]);
		const ids = workflows.map(([id]) => `'${id.replaceAll("'", "''")}'`).join(',');
		const published = await psql(
			pg.port,
			`update workflow_entity w set active = true, "activeVersionId" = w."versionId", "updatedAt" = now()
			where w.id in (${ids}) and not w."isArchived"
			and exists (select 1 from workflow_history h where h."workflowId" = w.id and h."versionId" = w."versionId")
			returning w.id`,
		);
		const missing = workflows.filter(([id]) => !published.split('\n').includes(id));
		if (missing.length > 0)
			throw new Error(`not published (no history row of their version?): ${missing.join(', ')}`);
		const main = n8n;
		hooks = await Promise.all(
			hookPorts.map(async (port) => await main.process('webhook', { N8N_PORT: String(port) })),
		);
		workers = await Promise.all(
			Array.from({ length: options.workers ?? 1 }, async () => await main.process('worker')),
		);
		await Promise.all([
			n8n.start(),
			...hooks.map(async (h) => await h.start()),
			...workers.map(async (w) => await w.start()),
		]);
	} catch (error) {
		await stop();
		throw error;
	}
	const instance = n8n;
	return {
		n8n: instance,
		pg,
		redis,
		hooks,
		workers,
		sql: async (query) => await psql(pg.port, query),
		ranOn: (executionId) =>
			workers.filter((w) => w.log().includes(`Worker started execution ${executionId} `)),
		logs: () =>
			[instance, ...hooks, ...workers]
				.map(
					(p) =>
						`--- ${'process' in p ? 'main' : p.command} ---\n${p
							.log()
							.split('\n')
							.filter((l) => !/^ - N8N_|deprecat|license SDK/i.test(l))
							.join('\n')
							.slice(-2500)}`,
				)
				.join('\n'),
		stop,
	};
}

/** Runs SQL in n8n's database on the Postgres at `port`: its output unaligned, tuples only. */
async function psql(port: number, query: string): Promise<string> {
	const { stdout } = await promisify(execFile)(
		'psql',
		['-h', '127.0.0.1', '-p', String(port), '-U', 'n8n', '-d', 'n8n', '-At', '-c', query],
		{ maxBuffer: 16 * 1024 * 1024 },
	);
	return stdout.trim();
}

/** POSTs JSON to an n8n process over its self-signed HTTPS. */
export async function postJson(
	base: string,
	pathname: string,
	body: unknown,
): Promise<{ status: number; text: string }> {
	const res = await request(`${base}${pathname}`, {
		method: 'POST',
		dispatcher: tls,
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	return { status: res.statusCode, text: await res.body.text() };
}

export type Step = [
	name: string,
	type: string,
	typeVersion: number,
	parameters: object,
	extra?: object,
];

/** A workflow whose nodes run one after the other, left to right. */
export function chain(id: string, name: string, steps: Step[]): string {
	const nodes = steps.map(([stepName, type, typeVersion, parameters, extra], i) => ({
		id: `${id}-${i}`,
		name: stepName,
		type,
		typeVersion,
		parameters,
		position: [i * 200, 0],
		...extra,
	}));
	const connections = Object.fromEntries(
		nodes
			.slice(0, -1)
			.map((n, i) => [n.name, { main: [[{ node: nodes[i + 1].name, type: 'main', index: 0 }]] }]),
	);
	return tempJson(`${id}.json`, { id, name, nodes, connections });
}

/** Resident memory of a process, from /proc (MiB). */
export function rssMiB(pid: number | undefined): number {
	if (!pid) return 0;
	const line = readFileSync(`/proc/${pid}/status`, 'utf8')
		.split('\n')
		.find((l) => l.startsWith('VmRSS:'));
	return line ? Number(line.replace(/\D+/g, '')) / 1024 : 0;
}
