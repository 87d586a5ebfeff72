'use strict';
// What the service sends out: job events to a job's webhook URL over HTTPS (redirects not followed),
// and its fetch of a media URL when it takes a job. As the interface is written, an event is
// delivered once: tries after a failure (`attempts`), a second copy (`duplicate`) and an event ahead
// of its job's status (`leadMs`, lifecycle.js) are options a suite turns on.
const { Agent, request: undiciRequest } = require('undici');

const { randomId } = require('./state');

/** Whether a URL points at this machine (127.0.0.0/8, ::1, localhost). */
function isLoopback(url) {
	try {
		const host = new URL(url).hostname;
		return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
	} catch {
		return false;
	}
}

function createDeliveries(ctx) {
	const { ledger, later } = ctx;
	const webhook = {
		attempts: 1,
		duplicate: false,
		leadMs: 0,
		rejectUnauthorized: true,
		...ctx.options.webhook,
	};
	const agent = new Agent({
		connect: { rejectUnauthorized: webhook.rejectUnauthorized, ca: webhook.ca },
		keepAliveTimeout: 1000,
	});
	const pending = new Set();
	let retriesScheduled = 0;

	/** POSTs an event, retrying non-2xx and network failures; redirects are not followed. */
	function deliver(url, event, attempt = 1) {
		const record = {
			eventId: event.id,
			type: event.type,
			jobId: event.data.id,
			url,
			attempt,
			status: null,
			error: null,
			at: Date.now(),
		};
		ledger.deliveries.push(record);
		const body = JSON.stringify(event);
		const p = undiciRequest(url, {
			method: 'POST',
			body,
			headers: {
				'content-type': 'application/json',
				'user-agent': 'captioning-sandbox-webhooks/1',
			},
			dispatcher: agent,
			headersTimeout: 10000,
			bodyTimeout: 10000,
		})
			.then(async (res) => {
				record.ms = Date.now() - record.at;
				record.status = res.statusCode;
				record.body = await res.body.text();
				return res.statusCode >= 200 && res.statusCode < 300;
			})
			.catch((err) => {
				record.ms ??= Date.now() - record.at;
				record.error = err.code ?? err.message;
				return false;
			})
			.then((ok) => {
				pending.delete(p);
				if (!ok && attempt < webhook.attempts && !ctx.closed) {
					retriesScheduled += 1;
					later(200 * attempt, () => {
						retriesScheduled -= 1;
						deliver(url, event, attempt + 1);
					});
				}
			});
		pending.add(p);
	}

	return {
		webhook,
		/** The job's event, to its webhook URL (if it has one). */
		emit(job, type) {
			const url = job.view.options.webhook_url;
			if (!url) return;
			const event = {
				id: randomId('evt_'),
				object: 'event',
				type,
				created_at: new Date().toISOString(),
				data: ctx.jobs.publicJob(job),
			};
			deliver(url, event);
			if (webhook.duplicate) deliver(url, event);
		},

		/**
		 * Fetches a media_url as the service would when it takes the job: a GET of the first KiB (the
		 * size from Content-Range). Only addresses on this machine (a test's own server, e.g. an
		 * S3-compatible one holding the media): the examples' media.example.com is never fetched.
		 * Recorded in ledger.mediaFetches (the URL without its query, which may hold a signature); a
		 * failed fetch cancels the job as media_unavailable when it would complete.
		 */
		fetchMediaIfLocal(job) {
			const url = job.view.media.url;
			if (!isLoopback(url)) return;
			const record = {
				jobId: job.view.id,
				url: url.split('?')[0],
				status: null,
				bytes: 0,
				size: null,
				error: null,
				at: Date.now(),
			};
			ledger.mediaFetches.push(record);
			const p = undiciRequest(url, {
				method: 'GET',
				headers: { range: 'bytes=0-1023' },
				dispatcher: agent,
				headersTimeout: 10000,
				bodyTimeout: 10000,
			})
				.then(async (res) => {
					record.status = res.statusCode;
					const range = /\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''));
					record.size = range
						? Number(range[1])
						: Number(res.headers['content-length'] ?? NaN) || null;
					record.bytes = (await res.body.arrayBuffer()).byteLength;
					if (res.statusCode !== 200 && res.statusCode !== 206)
						job.plannedCancellation = 'media_unavailable';
				})
				.catch((err) => {
					record.error = err.code ?? err.message;
					job.plannedCancellation = 'media_unavailable';
				})
				.finally(() => pending.delete(p));
			pending.add(p);
		},

		/** Resolves when every webhook delivery and media fetch under way, and every retry scheduled, has ended. */
		async settle() {
			while (pending.size > 0 || retriesScheduled > 0) await new Promise((r) => setTimeout(r, 20));
		},

		async close() {
			await Promise.allSettled([...pending]);
			await agent.close();
		},
	};
}

module.exports = { createDeliveries };
