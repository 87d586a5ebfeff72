// Servers on loopback that record what they receive: HTTPS with a self-signed certificate (the
// sandbox's webhook events) and plain HTTP (hosts n8n must or must not reach).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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

/**
 * A certificate for 127.0.0.1 that expired in 2020, issued by an authority of its own (`caPath`:
 * trust it, e.g. with NODE_EXTRA_CA_CERTS, and the expiry is what a client meets).
 */
export function expiredTlsPair(): TlsPair & { caPath: string } {
	const dir = mkdtempSync(path.join(tmpdir(), 'captioning-expired-'));
	const file = (name: string) => path.join(dir, name);
	const openssl = (...args: string[]) =>
		execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
	openssl(
		'req',
		'-x509',
		'-newkey',
		'rsa:2048',
		'-nodes',
		'-days',
		'30',
		'-subj',
		'/CN=Captioning test CA',
		'-keyout',
		'ca.key',
		'-out',
		'ca.pem',
	);
	openssl(
		'req',
		'-newkey',
		'rsa:2048',
		'-nodes',
		'-subj',
		'/CN=127.0.0.1',
		'-keyout',
		'key.pem',
		'-out',
		'leaf.csr',
	);
	writeFileSync(file('index.txt'), '');
	writeFileSync(file('serial'), '01\n');
	writeFileSync(
		file('ca.cnf'),
		[
			'[ca]',
			'default_ca = test',
			'[test]',
			'dir = .',
			'database = index.txt',
			'serial = serial',
			'new_certs_dir = .',
			'default_md = sha256',
			'policy = any',
			'x509_extensions = leaf',
			'[any]',
			'commonName = supplied',
			'[leaf]',
			'subjectAltName = IP:127.0.0.1',
			'',
		].join('\n'),
	);
	openssl(
		'ca',
		'-batch',
		'-config',
		'ca.cnf',
		'-cert',
		'ca.pem',
		'-keyfile',
		'ca.key',
		'-in',
		'leaf.csr',
		'-out',
		'cert.pem',
		'-startdate',
		'20200101000000Z',
		'-enddate',
		'20200102000000Z',
	);
	return {
		key: readFileSync(file('key.pem')),
		cert: readFileSync(file('cert.pem')),
		keyPath: file('key.pem'),
		certPath: file('cert.pem'),
		caPath: file('ca.pem'),
	};
}

/** An HTTPS server with this certificate that counts the TLS connections it was offered. */
export async function tlsServer(
	pair: TlsPair,
): Promise<{ url: string; handshakes: () => number; close(): Promise<void> }> {
	let handshakes = 0;
	const server = createServer({ key: pair.key, cert: pair.cert }, (_req, res) => res.end('{}'));
	server.on('connection', () => (handshakes += 1));
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
		handshakes: () => handshakes,
		close: async () => {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		},
	};
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
