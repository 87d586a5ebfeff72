#!/usr/bin/env node
'use strict';
// `npm run sandbox`: runs the simulator until Ctrl-C and prints what to put into n8n's credentials.
const { createSandbox } = require('./server');

function arg(name, fallback) {
	const i = process.argv.indexOf(`--${name}`);
	return i >= 0 ? process.argv[i + 1] : (process.env[`SANDBOX_${name.toUpperCase()}`] ?? fallback);
}

async function main() {
	const sandbox = await createSandbox({
		port: Number(arg('port', 4010)),
		storagePort: Number(arg('storage-port', 4011)),
		host: arg('host', '127.0.0.1'),
		timing: {
			queuedMs: Number(arg('queued-ms', 2000)),
			processingMs: Number(arg('processing-ms', 8000)),
		},
		// Lets n8n's self-signed HTTPS webhook receive events on a developer machine.
		webhook: { rejectUnauthorized: arg('webhook-tls-verify', 'true') !== 'false' },
		// Extensions of the interface as written, off by default (sandbox/routes.js, listJobs).
		listMetadataFilter: arg('list-metadata-filter', 'false') === 'true',
		listLagMs: Number(arg('list-lag-ms', 0)),
	});
	// A service that far away: every API request waits this long before it is handled.
	sandbox.setLatency(Number(arg('latency-ms', 0)));
	const lines = [
		'Captioning API sandbox is running.',
		'',
		`  Base URL:            ${sandbox.baseUrl}`,
		`  API key (full):      ${sandbox.keys.full}`,
		`  API key (read-only): ${sandbox.keys.readOnly}`,
		`  API key (revoked):   ${sandbox.keys.revoked}`,
		`  Other workspace:     ${sandbox.keys.otherWorkspace}`,
		`  No balance (402):    ${sandbox.keys.noBalance}`,
		'',
		'Media URLs: add ?duration=<seconds> to set the length; a path containing cancel-<reason>',
		'(e.g. cancel-unsupported_language) makes the job end cancelled with that reason.',
		'Press Ctrl-C to stop.',
	];
	console.log(lines.join('\n'));
	const stop = async () => {
		await sandbox.close();
		process.exit(0);
	};
	process.on('SIGINT', stop);
	process.on('SIGTERM', stop);
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
