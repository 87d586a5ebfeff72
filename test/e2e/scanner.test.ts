// n8n's verification scanner (@n8n/scan-community-package, its exported analyzePackage, offline)
// on the tarball npm would publish: no finding. A copy with a console.log in a node must fail it,
// so a green result means the scanner really read the package.
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { installN8n, packPackage, tempFolder } from '../real/instance';

const run = promisify(execFile);
const SCANNER = 'scanner-0.32.0';

async function analyze(
	packageDir: string,
): Promise<{ passed: boolean; message?: string; details?: string }> {
	const scanner = await installN8n(SCANNER);
	const module = path.join(
		scanner.dir,
		'node_modules/@n8n/scan-community-package/scanner/scanner.mjs',
	);
	const script = `const { analyzePackage } = await import(${JSON.stringify(module)}); process.stdout.write(JSON.stringify(await analyzePackage(process.argv[1])));`;
	const { stdout } = await run(
		path.join(scanner.nodeBin, 'node'),
		['--input-type=module', '-e', script, packageDir],
		{ maxBuffer: 16 * 1024 * 1024 },
	);
	return JSON.parse(stdout) as { passed: boolean; message?: string; details?: string };
}

test(
	'the packed package passes the scanner; a node with a console.log does not',
	async () => {
		const unpacked = tempFolder('captioning-scan-');
		await run('tar', ['-xzf', await packPackage(), '-C', unpacked]);
		const packageDir = path.join(unpacked, 'package');
		const result = await analyze(packageDir);
		expect(result).toEqual({ passed: true });

		const broken = tempFolder('captioning-scan-broken-');
		cpSync(packageDir, broken, { recursive: true });
		const node = path.join(broken, 'dist/nodes/Captioning/Captioning.node.js');
		appendFileSync(node, '\nconsole.log("left over");\n');
		expect(readFileSync(node, 'utf8')).toContain('left over');
		const refused = await analyze(broken);
		expect(refused).toMatchObject({ passed: false, message: 'ESLint violations found' });
		expect(refused.details).toMatch(/no-console/);
	},
	10 * 60 * 1000,
);
