// What gets published, and how: the packed contents, what shipped code may import, the GitHub
// workflows that publish with provenance, a lockfile npm ci accepts, and n8n Cloud eligibility.
// (The workflows cannot run here; their parts that matter are checked as data.)
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<
	string,
	any
>;
const workflow = (name: string) =>
	parse(readFileSync(path.join(root, '.github/workflows', name), 'utf8')) as Record<string, any>;

function files(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const full = path.join(dir, name);
		return statSync(full).isDirectory() ? files(full) : [full];
	});
}

describe('the packed package', () => {
	test('holds only dist, README, LICENSE, CHANGELOG and package.json; every file n8n loads is in it', async () => {
		expect(existsSync(path.join(root, 'dist'))).toBe(true); // npm run build comes first (.ci/run)
		const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
			cwd: root,
			maxBuffer: 16 * 1024 * 1024,
		});
		const packed = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0].files.map(
			(f) => f.path,
		);
		const outside = packed.filter(
			(p) =>
				!p.startsWith('dist/') &&
				!['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(p),
		);
		expect(outside).toEqual([]);
		expect(packed).toEqual(
			expect.arrayContaining(['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']),
		);
		for (const file of [...pkg.n8n.nodes, ...pkg.n8n.credentials]) expect(packed).toContain(file);
		expect(packed.filter((p) => /\.test\.|\/test\/|sandbox|bench|examples/.test(p))).toEqual([]);
	});

	test('package.json: no main, no runtime dependencies, strict, one home for author, homepage, repository and bugs', () => {
		expect(pkg.main).toBeUndefined();
		expect(pkg.dependencies).toBeUndefined();
		expect(pkg.n8n.strict).toBe(true);
		expect(pkg.files).toEqual(['dist', 'CHANGELOG.md']);
		const repo = 'github.com/n8n-nodes-captioning/n8n-nodes-captioning';
		expect(pkg.homepage).toContain(repo);
		expect(pkg.repository.url).toContain(repo);
		expect(pkg.bugs.url).toContain(repo);
		expect(pkg.author.name).toBeTruthy();
		expect(pkg.keywords).toContain('n8n-community-node-package');
	});

	test('the build clears dist first, so no stale file can ship', async () => {
		const stale = path.join(root, 'dist', 'stale-left-over.js');
		writeFileSync(stale, 'module.exports = 1;\n');
		await run('npm', ['run', 'build'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
		expect(existsSync(stale)).toBe(false);
		expect(existsSync(path.join(root, pkg.n8n.nodes[0]))).toBe(true);
	}, 120000);
});

describe('shipped code imports only what n8n provides', () => {
	// n8n's community-node rule (@n8n/eslint-plugin-community-nodes, no-restricted-imports) allows
	// n8n-workflow and crypto; the linter and the scanner let devDependencies through, which would
	// crash on n8n Cloud, so the compiled files are read here.
	const allowed = new Set(['n8n-workflow', 'crypto', 'node:crypto']);
	test('dist/nodes and dist/credentials require nothing else', () => {
		const required = [
			...files(path.join(root, 'dist', 'nodes')),
			...files(path.join(root, 'dist', 'credentials')),
		]
			.filter((f) => f.endsWith('.js'))
			.flatMap((f) =>
				[...readFileSync(f, 'utf8').matchAll(/require\((["'])([^"']+)\1\)/g)].map((m) => m[2]),
			)
			.filter((m) => !m.startsWith('.'));
		expect(required.length).toBeGreaterThan(0);
		expect([...new Set(required)].filter((m) => !allowed.has(m))).toEqual([]);
		expect(builtinModules).toContain('crypto');
	});
});

describe('publishing from GitHub Actions with provenance', () => {
	test('publish.yml: on a version tag, id-token write, npm ci, then npm run release (which publishes with provenance in CI)', () => {
		const publish = workflow('publish.yml');
		expect(publish.on.push.tags).toEqual(['*.*.*']);
		const job = publish.jobs.publish;
		expect(job.permissions).toEqual({ 'id-token': 'write', contents: 'read' });
		const runs = (job.steps as Array<{ run?: string }>).map((s) => s.run ?? '');
		expect(runs).toContain('npm ci');
		expect(runs.some((r) => /npm run release/.test(r))).toBe(true);
	});

	test('ci.yml: on pull requests and main, npm ci, lint, build, tests', () => {
		const ci = workflow('ci.yml');
		expect(Object.keys(ci.on)).toEqual(expect.arrayContaining(['pull_request', 'push']));
		expect(ci.on.push.branches).toEqual(['main']);
		const runs = (ci.jobs.build.steps as Array<{ run?: string }>).map((s) => s.run).filter(Boolean);
		expect(runs).toEqual(['npm ci', 'npm run lint', 'npm run build', 'npm test']);
	});

	test("release and prepublishOnly are @n8n/node-cli's: release publishes with provenance in CI, a plain npm publish is refused", async () => {
		expect(pkg.scripts.release).toBe('n8n-node release');
		expect(pkg.scripts.prepublishOnly).toBe('n8n-node prerelease');
		expect(pkg.devDependencies['release-it']).toBeTruthy();
		const release = readFileSync(
			path.join(root, 'node_modules/@n8n/node-cli/dist/commands/release.js'),
			'utf8',
		);
		expect(release).toMatch(/NPM_CONFIG_PROVENANCE: 'true'/);
		const { NODE_ENV: _env, RELEASE_MODE: _mode, ...env } = process.env;
		await expect(run('npx', ['n8n-node', 'prerelease'], { cwd: root, env })).rejects.toMatchObject({
			stdout: expect.stringMatching(/npm run release/),
		});
	});
});

describe('install and verification', () => {
	test('the lockfile lists every optional dependency of what it locks (npm ci refuses it otherwise)', () => {
		const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
			packages: Record<string, { optionalDependencies?: Record<string, string> }>;
		};
		const missing: string[] = [];
		for (const [where, entry] of Object.entries(lock.packages)) {
			for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
				const nested = `${where}/node_modules/${dep}`;
				if (!lock.packages[nested] && !lock.packages[`node_modules/${dep}`])
					missing.push(`${where} → ${dep}`);
			}
		}
		expect(missing).toEqual([]);
	});

	test("eslint.config.mjs is n8n's default and n8n-node cloud-support says the package is eligible", async () => {
		expect(readFileSync(path.join(root, 'eslint.config.mjs'), 'utf8')).toBe(
			"import { config } from '@n8n/node-cli/eslint';\n\nexport default config;\n",
		);
		// CI may force colours (FORCE_COLOR): ask for none and strip what still comes.
		const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
		const { stdout } = await run('npx', ['n8n-node', 'cloud-support'], { cwd: root, env });
		const text = stdout.replace(/\u001b\[[0-9;]*m/g, '');
		expect(text).toMatch(/Cloud support is ENABLED/);
		expect(text).toMatch(/eligible for n8n Cloud verification/);
	});
});
