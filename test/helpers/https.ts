// Servers on loopback that record what they receive: HTTPS with a self-signed certificate (the
// sandbox's webhook events) and plain HTTP (hosts n8n must or must not reach).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TlsPair {
	key: Buffer;
	cert: Buffer;
	keyPath: string;
	certPath: string;
}

let pair: TlsPair | undefined;

/** A self-signed certificate for 127.0.0.1, made once per process with openssl. */
export function tlsPair(): TlsPair {
	if (pair) return pair;
	const dir = mkdtempSync(path.join(tmpdir(), 'captioning-tls-'));
	const keyPath = path.join(dir, 'key.pem');
	const certPath = path.join(dir, 'cert.pem');
	execFileSync(
		'openssl',
		[
			'req',
			'-x509',
			'-newkey',
			'rsa:2048',
			'-nodes',
			'-days',
			'2',
			'-subj',
			'/CN=127.0.0.1',
			'-addext',
			'subjectAltName=IP:127.0.0.1',
			'-keyout',
			keyPath,
			'-out',
			certPath,
		],
		{ stdio: 'ignore' },
	);
	pair = { key: readFileSync(keyPath), cert: readFileSync(certPath), keyPath, certPath };
	return pair;
}

export interface Received {
	method: string;
	url: string;
	headers: IncomingMessage['headers'];
	body: string;
}

export interface HttpsReceiver {
	url: string;
	received: Received[];
	close(): Promise<void>;
}

type Respond = (req: Received, res: ServerResponse) => void;

/** Starts an HTTPS server; `respond` decides each answer (default 200 "ok"). */
export async function httpsReceiver(respond?: Respond): Promise<HttpsReceiver> {
	const { key, cert } = tlsPair();
	return await receiver('https', (listener) => createServer({ key, cert }, listener), respond);
}

/** The same over plain HTTP (what n8n's request helpers reach without a custom CA). */
export async function httpReceiver(respond?: Respond): Promise<HttpsReceiver> {
	return await receiver('http', (listener) => createHttpServer(listener), respond);
}

async function receiver(
	scheme: 'http' | 'https',
	create: (listener: (req: IncomingMessage, res: ServerResponse) => void) => Server,
	respond: Respond = (_req, res) => res.end('ok'),
): Promise<HttpsReceiver> {
	const received: Received[] = [];
	const server = create((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (c: Buffer) => chunks.push(c));
		req.on('end', () => {
			const r = {
				method: req.method ?? '',
				url: req.url ?? '',
				headers: req.headers,
				body: Buffer.concat(chunks).toString('utf8'),
			};
			received.push(r);
			respond(r, res);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `${scheme}://127.0.0.1:${port}`,
		received,
		close: async () => {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		},
	};
}
