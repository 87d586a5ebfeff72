// Each jest suite's time, from the JSON results jest wrote into a folder (.ci/run: E2E_JSON_DIR for
// npm run test:e2e, --json --outputFile for the queue and editor suites): one line a suite, longest
// first, with what the file name says of its run (e2e-<version>-<suite>, queue, ui); then each failed
// test with the first lines of its message, so that CI's tail names what failed.
const { readdirSync, readFileSync } = require('node:fs');
const path = require('node:path');

const folder = process.argv[2];
const rows = [];
const failures = [];
for (const name of readdirSync(folder).filter((n) => n.endsWith('.json'))) {
	let result;
	try {
		result = JSON.parse(readFileSync(path.join(folder, name), 'utf8'));
	} catch {
		continue;
	}
	const run = name.replace(/\.json$/, '').replace(/-[^-]+\.test\.ts$/, '');
	for (const suite of result.testResults ?? []) {
		const seconds = (suite.endTime - suite.startTime) / 1000;
		const tests = suite.assertionResults ?? [];
		for (const test of tests.filter((t) => t.status === 'failed')) {
			const message = (test.failureMessages ?? []).join('\n').split('\n').slice(0, 12);
			failures.push(
				`FAILED ${run} ${path.basename(suite.name)}: ${test.fullName}`,
				...message.map((l) => `  ${l}`),
			);
		}
		if (suite.status === 'failed' && tests.length === 0) {
			failures.push(
				`FAILED ${run} ${path.basename(suite.name)}:`,
				...String(suite.message ?? '')
					.split('\n')
					.slice(0, 12)
					.map((l) => `  ${l}`),
			);
		}
		rows.push({
			seconds,
			line: `${seconds.toFixed(0).padStart(6)}  ${run.padEnd(14)} ${path.basename(suite.name).padEnd(34)} ${tests.filter((t) => t.status === 'passed').length}/${tests.length} passed${suite.status === 'failed' ? '  FAILED' : ''}`,
		});
	}
}
for (const { line } of rows.sort((a, b) => b.seconds - a.seconds)) console.log(line);
for (const line of failures) console.log(line.slice(0, 300));
