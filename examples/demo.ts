// npm run demo: the README's main command. Real n8n (2.41.1, installed into a cache folder the
// first time) with this package installed as users install it runs the "order and wait" example:
// order captions, wait for them, download SRT and VTT, write them to ./captions-out.
// Uses the service at CAPTIONING_BASE_URL with CAPTIONING_API_KEY when both are set (a real
// account; CAPTIONING_MEDIA_URL then names the media to caption), the local sandbox otherwise.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { createSandbox } from '../test/helpers/sandbox';
import { createN8n, installN8n, tempJson } from '../test/real/instance';
import { TEMPLATE_DISK, template } from '../test/real/workflows';

const N8N_VERSION = process.env.N8N_DEMO_VERSION ?? '2.41.1';
const out = path.resolve(__dirname, '..', 'captions-out');
const say = (line: string) => process.stdout.write(`${line}\n`);

async function main() {
	const real = Boolean(process.env.CAPTIONING_BASE_URL && process.env.CAPTIONING_API_KEY);
	const sandbox = real
		? undefined
		: await createSandbox({ timing: { queuedMs: 1000, processingMs: 4000 } });
	const baseUrl = real ? process.env.CAPTIONING_BASE_URL! : sandbox!.baseUrl;
	const apiKey = real ? process.env.CAPTIONING_API_KEY! : sandbox!.keys.full;
	say(
		real
			? `Using the captioning service at ${baseUrl}`
			: `Started the captioning sandbox at ${baseUrl}`,
	);
	try {
		say(
			`Preparing n8n ${N8N_VERSION} (the first run installs it from npm into ${process.env.N8N_E2E_CACHE ?? '~/.cache/n8n-nodes-captioning'}: about 5 minutes; then seconds)…`,
		);
		const install = await installN8n(N8N_VERSION, say);
		mkdirSync(path.join(out), { recursive: true });
		const n8n = await createN8n(install, [out]);
		say(
			`n8n ${N8N_VERSION} is ready in ${n8n.userFolder} (a fresh user folder, removed when the demo ends), with n8n-nodes-captioning installed`,
		);

		await n8n.cli([
			'import:credentials',
			`--input=${tempJson('credentials.json', [{ id: 'captioningSandbox', name: 'Captioning account', type: 'captioningApi', data: { apiKey, baseUrl } }])}`,
		]);
		// The template as a user sets it up: its folder this demo's, its media a link (the sandbox
		// takes any; a real account CAPTIONING_MEDIA_URL), and with the sandbox, which finishes a job in
		// 5 s, Poll every 2 s instead of the template's 30.
		const workflow = template('order-and-wait', { [`${TEMPLATE_DISK}/captions`]: out }, (wf) => {
			const order = wf.nodes.find((n) => n.name === 'Order Captions and Wait')!;
			if (!real)
				Object.assign(order.parameters, {
					mediaUrl: 'https://media.example.com/keynote.mp4?duration=90',
					pollInterval: 2,
				});
			else if (process.env.CAPTIONING_MEDIA_URL)
				order.parameters.mediaUrl = process.env.CAPTIONING_MEDIA_URL;
		});
		await n8n.cli([
			'import:workflow',
			`--input=${tempJson('order-and-wait.json', { ...workflow, id: 'demoOrderAndWait' })}`,
		]);
		say(
			'Running the workflow "Captioning: order and wait" (order → wait → get captions → write files)…',
		);
		const started = Date.now();
		await n8n.cli(['execute', '--id=demoOrderAndWait', '--rawOutput']);
		say(`Done in ${((Date.now() - started) / 1000).toFixed(1)} s.`);

		const files = readdirSync(out).filter((f) => /\.(srt|vtt)$/.test(f));
		say(`\nCaptions written to ${out}:`);
		for (const f of files) say(`  ${f}`);
		const srt = files.find((f) => f.endsWith('.srt'));
		if (srt) {
			say(`\nFirst lines of ${srt}:`);
			say(
				readFileSync(path.join(out, srt), 'utf8')
					.split('\n')
					.slice(0, 12)
					.map((l) => `  ${l}`)
					.join('\n'),
			);
		}
	} finally {
		await sandbox?.close();
	}
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).message}\n`);
	process.exit(1);
});
