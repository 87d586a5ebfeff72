// Answers before work. Under a burst n8n has more to do than its event loop and database can do at
// once: every delivery waits for n8n to load the workflow before the trigger can answer, and every
// execution the trigger starts (and every caption download) takes the same event loop and database.
// A delivery not answered within the service's 10 s is given up on and sent again, which adds to the
// burst. So in this process the triggers answer first: once an event is answered, its captions are
// downloaded and its execution started only when no delivery is waiting for an answer and none has
// come for a moment (or, under a stream that never pauses, after `maxDeferMs`). Only events with
// captions to download wait: n8n 2.x (with its default expression engine settings) holds an isolate
// for every delivery until the trigger's webhook() returns, so an event with nothing to download
// starts its workflow at once rather than hold one (measured: 150 events, each twice, without
// captions: p95 answer 19.7 s with every event waiting, against 10.7 s for n8n's Webhook node).
import { pause } from '../Captioning/transport';

export const answerLimits = {
	/** No delivery for this long: the burst has been answered. */
	quietMs: 250,
	/** The longest an answered event's work waits for quiet. */
	maxDeferMs: 20000,
};

let unanswered = 0;
let lastArrival = 0;

/** A delivery arrived; call what it returns once it has been answered (more than once is fine). */
export function arrived(): () => void {
	unanswered += 1;
	lastArrival = Date.now();
	let done = false;
	return () => {
		if (done) return;
		done = true;
		unanswered -= 1;
	};
}

/** Resolves once no delivery waits for an answer and none has arrived for a moment. */
export async function afterAnswers(): Promise<void> {
	const until = Date.now() + answerLimits.maxDeferMs;
	while (Date.now() < until) {
		const quietFor = Date.now() - lastArrival;
		if (unanswered === 0 && quietFor >= answerLimits.quietMs) return;
		await pause(Math.max(20, answerLimits.quietMs - quietFor));
	}
}
