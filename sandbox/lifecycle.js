'use strict';
// Jobs: what an order costs, the job it makes, and its life (queued → processing → completed or
// cancelled, on the sandbox's clock or when a test says), as the API shows it.
const crypto = require('node:crypto');

const { ApiError } = require('./http');
const { FORMATS } = require('./captions');
const { cents, dollars } = require('./state');

const CANCELLATION_MESSAGES = {
	unsupported_language: 'The spoken language is not supported.',
	unsupported_media: 'The media format is not supported.',
	unusable_media: 'The media has no usable audio.',
	media_unavailable: 'The media could not be downloaded.',
	deleted: 'The job was deleted.',
	not_started: 'The job was cancelled before it started.',
};

/** A media URL's length: ?duration=<seconds>, else five minutes. */
function mediaSeconds(url) {
	const d = new URL(url).searchParams.get('duration');
	return d === null ? 300 : Number(d);
}

/** A path containing cancel-<reason> ends the job cancelled with that reason. */
function plannedCancellation(text) {
	const m = /cancel-([a-z_]+)/.exec(text ?? '');
	return m && CANCELLATION_MESSAGES[m[1]] ? m[1] : null;
}

function costCents(ws, seconds, options) {
	const minutes = Math.max(1, Math.ceil(seconds / 60));
	const r = options.redactions;
	const redacting = r.pii || r.names || r.organizations || r.terms.length > 0;
	const perMinute =
		cents(ws.billing.rate_per_minute) + (options.atmospherics ? 5 : 0) + (redacting ? 10 : 0);
	return minutes * perMinute;
}

/** The job's options as the API shows them: the order's, with the defaults filled in. */
function jobOptions(body) {
	const r = body.redactions ?? {};
	const redactions = {
		pii: r.pii ?? false,
		names: r.names ?? false,
		organizations: r.organizations ?? false,
		terms: r.terms ?? [],
		replacement: r.replacement ?? 'category_label',
	};
	if (r.custom_replacement !== undefined) redactions.custom_replacement = r.custom_replacement;
	return {
		style: body.style ?? 'clean',
		model: body.model ?? 'captioner-base',
		speaker_labels: body.speaker_labels ?? true,
		speaker_label_style: body.speaker_label_style ?? 'gt_name',
		atmospherics: body.atmospherics ?? true,
		profanity: body.profanity ?? 'as_spoken',
		redactions,
		glossary: body.glossary ?? [],
		webhook_url: body.webhook_url ?? null,
	};
}

function createJobs(ctx) {
	const { ledger, workspaces, later } = ctx;

	function publicJob(job) {
		const out = { ...job.view };
		if (job.view.status === 'processing' && ctx.timing) {
			const elapsed = Date.now() - job.startedAt;
			out.progress = Math.min(99, Math.floor((elapsed / ctx.timing.processingMs) * 100));
		}
		return JSON.parse(JSON.stringify(out));
	}

	function captionLinks(ws, job) {
		const links = {};
		for (const f of FORMATS) {
			if (ctx.captionsOn === 'storage') {
				const sig = ctx.sign(`captions:${ws.id}:${job.view.id}`);
				links[f] = `${ctx.storageOrigin}/captions/${ws.id}/${job.view.id}.${f}?sig=${sig}`;
			} else {
				links[f] = `${ctx.baseUrl}/jobs/${job.view.id}/captions.${f}`;
			}
		}
		return links;
	}

	function startProcessing(ws, job) {
		if (job.view.status !== 'queued') return;
		job.startedAt = Date.now();
		Object.assign(job.view, {
			status: 'processing',
			progress: 0,
			language: 'en',
			eta: ctx.timing ? new Date(Date.now() + ctx.timing.processingMs).toISOString() : null,
		});
		if (ctx.timing) {
			later(ctx.timing.processingMs, () =>
				job.plannedCancellation
					? cancelJob(job.view.id, job.plannedCancellation)
					: completeJob(job.view.id),
			);
		}
	}

	function findJob(id) {
		for (const ws of workspaces.values()) {
			const job = ws.jobs.get(id);
			if (job) return { ws, job };
		}
		throw new Error(`no job ${id}`);
	}

	function completeJob(id) {
		const { ws, job } = findJob(id);
		if (job.view.status === 'completed' || job.view.status === 'cancelled') return publicJob(job);
		// The media could not be fetched (see fetchMedia): the job cannot complete.
		if (job.plannedCancellation === 'media_unavailable') return cancelJob(id, 'media_unavailable');
		if (job.view.status === 'queued') startProcessing(ws, job);
		const completed = {
			status: 'completed',
			progress: 100,
			eta: null,
			captions: captionLinks(ws, job),
			completed_at: new Date().toISOString(),
		};
		const { leadMs } = ctx.deliveries.webhook;
		if (leadMs > 0) {
			// The event goes ahead: reads show the job completed `leadMs` later.
			ctx.deliveries.emit({ ...job, view: { ...job.view, ...completed } }, 'job.completed');
			later(leadMs, () => Object.assign(job.view, completed));
			return publicJob({ ...job, view: { ...job.view, ...completed } });
		}
		Object.assign(job.view, completed);
		ctx.deliveries.emit(job, 'job.completed');
		return publicJob(job);
	}

	function cancelJob(id, reason) {
		const { ws, job } = findJob(id);
		if (!CANCELLATION_MESSAGES[reason]) throw new Error(`unknown cancellation reason ${reason}`);
		if (job.view.status === 'completed' || job.view.status === 'cancelled') return publicJob(job);
		// A cancelled job is refunded: cost is net of refunds.
		const charged = cents(job.view.cost.amount);
		if (ws.billing.balanceCents !== null) ws.billing.balanceCents += charged;
		ledger.refunds.push({ jobId: id, workspaceId: ws.id, amountCents: charged });
		Object.assign(job.view, {
			status: 'cancelled',
			progress: null,
			eta: null,
			cost: { amount: '0.00', currency: 'usd' },
			cancellation: { reason, message: CANCELLATION_MESSAGES[reason] },
			completed_at: new Date().toISOString(),
		});
		ctx.deliveries.emit(job, 'job.cancelled');
		return publicJob(job);
	}

	/**
	 * A new job of a valid order (CreateJob, validated): its media, its cost charged to a prepaid
	 * balance (402 when short), recorded in the ledger, and on the sandbox's clock if it runs one.
	 */
	function placeOrder(ws, body, idempotencyKey) {
		let media;
		let cancellation;
		if (body.media_url !== undefined) {
			media = {
				type: 'url',
				url: body.media_url,
				upload_id: null,
				duration_seconds: mediaSeconds(body.media_url),
			};
			cancellation = plannedCancellation(body.media_url);
		} else {
			const upload = ws.uploads.get(body.upload_id);
			if (!upload)
				throw new ApiError(
					404,
					'not_found',
					'No upload with this id exists in this workspace.',
					'upload_id',
				);
			if (!upload.complete)
				throw new ApiError(
					400,
					'upload_incomplete',
					'The file of this upload has not been received yet; PUT it to upload_url first.',
					'upload_id',
				);
			media = {
				type: 'upload',
				url: null,
				upload_id: upload.id,
				duration_seconds: Math.max(1, Math.round(upload.receivedBytes / 1e6)),
			};
			cancellation = plannedCancellation(upload.filename);
		}
		if (!(media.duration_seconds <= ctx.limits.mediaSecondsMax)) {
			throw new ApiError(
				422,
				'media_too_long',
				`The media is longer than the workspace limit of ${ctx.limits.mediaSecondsMax / 3600} hours.`,
				body.media_url !== undefined ? 'media_url' : 'upload_id',
			);
		}
		const options = jobOptions(body);
		const amount = costCents(ws, media.duration_seconds, options);
		if (ws.billing.balanceCents !== null && ws.billing.balanceCents < amount) {
			throw new ApiError(
				402,
				'insufficient_funds',
				`This order costs ${dollars(amount)} USD and the prepaid balance is ${dollars(ws.billing.balanceCents)} USD.`,
			);
		}
		if (ws.billing.balanceCents !== null) ws.billing.balanceCents -= amount;
		const id = crypto.randomUUID();
		const job = {
			workspaceId: ws.id,
			plannedCancellation: cancellation,
			view: {
				id,
				object: 'job',
				status: 'queued',
				progress: null,
				eta: null,
				title: body.title ?? id,
				media,
				language: null,
				options,
				cost: { amount: dollars(amount), currency: 'usd' },
				cancellation: null,
				captions: null,
				metadata: body.metadata ?? {},
				created_at: ctx.creationTime ?? new Date().toISOString(),
				completed_at: null,
			},
			createdMs: Date.now(),
		};
		ws.jobs.set(id, job);
		ledger.jobs.push({ id, workspaceId: ws.id, body, idempotencyKey: idempotencyKey ?? null });
		ledger.charges.push({ jobId: id, workspaceId: ws.id, amountCents: amount });
		if (body.media_url !== undefined) ctx.deliveries.fetchMediaIfLocal(job);
		if (ctx.timing) later(ctx.timing.queuedMs, () => startProcessing(ws, job));
		return job;
	}

	/**
	 * History: `count` jobs of the first workspace that finished long ago (completed), made directly,
	 * oldest first, before any job ordered later. Not in the ledger: no request made them.
	 */
	function seedHistory(count, options = {}) {
		const { status = 'completed', metadata = {}, workspace = 0, withinMs } = options;
		const ws = [...workspaces.values()][workspace];
		const start = Date.now() - (withinMs ?? 30 * 86400 * 1000);
		const step = withinMs === undefined ? 1000 : withinMs / count;
		const done = status === 'completed';
		for (let n = 0; n < count; n++) {
			const id = crypto.randomUUID();
			const job = {
				workspaceId: ws.id,
				view: {
					id,
					object: 'job',
					status,
					progress: done ? 100 : null,
					eta: null,
					title: `Old job ${n}`,
					media: {
						type: 'url',
						url: `https://media.example.com/old/${n}.mp4`,
						upload_id: null,
						duration_seconds: 60,
					},
					language: 'en',
					options: jobOptions({}),
					cost: { amount: '0.30', currency: 'usd' },
					cancellation: null,
					captions: null,
					metadata: { ...metadata },
					created_at: new Date(start + n * step).toISOString(),
					completed_at: done ? new Date(start + n * step + 600000).toISOString() : null,
				},
			};
			if (done) job.view.captions = captionLinks(ws, job);
			ws.jobs.set(id, job);
		}
	}

	function startJob(id) {
		const { ws, job } = findJob(id);
		startProcessing(ws, job);
		return publicJob(job);
	}

	return { publicJob, findJob, completeJob, cancelJob, placeOrder, seedHistory, startJob };
}

module.exports = { createJobs, CANCELLATION_MESSAGES };
