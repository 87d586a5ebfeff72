'use strict';
// Renders a job's captions in the five formats, applying the job's options to a fixed script,
// so tests can see that style, speaker labels, atmospherics, profanity, redactions and glossary took effect.
const zlib = require('node:zlib');

const SCRIPT = [
	{ sound: 'MUSIC' },
	{ speaker: 'ALEX', text: 'Um, welcome back to the show. I-I am Alex from Globex Corporation.' },
	{
		speaker: 'MARIA',
		text: 'Thanks Alex. Today Maria Lopez talks about kubernetes, uh, at scale.',
	},
	{ sound: 'LAUGHTER' },
	{ speaker: 'ALEX', text: 'That damn cluster went down again last week.' },
	{ speaker: 'MARIA', text: 'Reach me at maria@example.com or 555-0142 for the slides.' },
	{ speaker: 'ALEX', text: 'Great, thanks for joining us.' },
];

const CONTENT_TYPES = {
	srt: 'application/x-subrip',
	vtt: 'text/vtt; charset=utf-8',
	txt: 'text/plain; charset=utf-8',
	docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
	json: 'application/json',
};

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function redact(text, options) {
	const r = options.redactions;
	const replace = (category) =>
		({
			redacted: '[REDACTED]',
			category_label: `[${category}]`,
			silent: '',
			custom_string: r.custom_replacement,
		})[r.replacement];
	if (r.pii) {
		text = text
			.replace(/[\w.+-]+@[\w-]+\.[\w.]+/g, replace('EMAIL'))
			.replace(/\b\d{3}-\d{4}\b/g, replace('PHONE'));
	}
	if (r.names) text = text.replace(/\bMaria Lopez\b|\bAlex\b/g, replace('NAME'));
	if (r.organizations) text = text.replace(/\bGlobex Corporation\b/g, replace('ORGANIZATION'));
	for (const term of r.terms) {
		text = text.replace(new RegExp(escapeRegExp(term), 'gi'), replace('TERM'));
	}
	return text;
}

function cueText(line, options) {
	let text = line.text;
	if (options.style === 'clean') {
		text = text.replace(/\b(Um|uh),\s*/gi, '').replace(/\b(\w+)-\1\b/g, '$1');
	}
	text = text.replace(
		/\bdamn\b/g,
		{ as_spoken: 'damn', mask: 'd***', label: '[expletive]', omit: '' }[options.profanity],
	);
	for (const term of options.glossary) {
		text = text.replace(new RegExp(`\\b${escapeRegExp(term)}\\b`, 'gi'), term);
	}
	text = redact(text, options);
	text = text
		.replace(/\s{2,}/g, ' ')
		.replace(/\s+([.,])/g, '$1')
		.trim();
	return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The cues of a job: {start, end, speaker|null, text} in seconds. */
function cues(job) {
	const { options } = job;
	const lines = SCRIPT.filter((l) => options.atmospherics || !l.sound);
	const span = Math.max(1, Math.min(job.media.duration_seconds, lines.length * 4));
	const step = span / lines.length;
	return lines.map((line, i) => ({
		start: i * step,
		end: (i + 1) * step,
		speaker: line.speaker ?? null,
		text: line.sound ? `[${line.sound}]` : cueText(line, options),
	}));
}

function timestamp(seconds, separator) {
	const ms = Math.round(seconds * 1000);
	const pad = (n, w = 2) => String(n).padStart(w, '0');
	return `${pad(Math.floor(ms / 3600000))}:${pad(Math.floor(ms / 60000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

function labelled(cue, options) {
	if (!cue.speaker || !options.speaker_labels) return cue.text;
	const name = cue.speaker;
	return {
		gt_name: `>> ${name}: ${cue.text}`,
		brackets: `[${name}] ${cue.text}`,
		colon: `${name}: ${cue.text}`,
		dashes: `- ${cue.text}`,
	}[options.speaker_label_style];
}

function srt(job) {
	return cues(job)
		.map(
			(c, i) =>
				`${i + 1}\n${timestamp(c.start, ',')} --> ${timestamp(c.end, ',')}\n${labelled(c, job.options)}\n`,
		)
		.join('\n');
}

function vtt(job) {
	const body = cues(job)
		.map(
			(c) =>
				`${timestamp(c.start, '.')} --> ${timestamp(c.end, '.')}\n${labelled(c, job.options)}\n`,
		)
		.join('\n');
	return `WEBVTT\n\n${body}`;
}

/** Transcript paragraphs with native speaker headings ("Alex:" above the turn). */
function paragraphs(job) {
	const out = [];
	for (const c of cues(job)) {
		const heading =
			c.speaker && job.options.speaker_labels
				? c.speaker[0] + c.speaker.slice(1).toLowerCase()
				: null;
		const last = out[out.length - 1];
		if (last && last.heading === heading && heading) last.text += ` ${c.text}`;
		else out.push({ heading, text: c.text });
	}
	return out;
}

function txt(job) {
	return paragraphs(job)
		.map((p) => (p.heading ? `${p.heading}:\n${p.text}\n` : `${p.text}\n`))
		.join('\n');
}

function json(job) {
	return JSON.stringify(
		{
			job_id: job.id,
			language: job.language,
			segments: cues(job).map((c) => ({
				start: c.start,
				end: c.end,
				speaker: c.speaker,
				text: c.text,
			})),
		},
		null,
		2,
	);
}

// --- DOCX: a real Office Open XML package, zipped with node:zlib ---

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
	let c = n;
	for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	return c >>> 0;
});

function crc32(buf) {
	let c = 0xffffffff;
	for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
}

function zip(files) {
	const locals = [];
	const centrals = [];
	let offset = 0;
	for (const [name, content] of Object.entries(files)) {
		const data = Buffer.from(content, 'utf8');
		const deflated = zlib.deflateRawSync(data);
		const nameBuf = Buffer.from(name, 'utf8');
		const crc = crc32(data);
		const local = Buffer.alloc(30);
		local.writeUInt32LE(0x04034b50, 0);
		local.writeUInt16LE(20, 4);
		local.writeUInt16LE(0, 6);
		local.writeUInt16LE(8, 8);
		local.writeUInt32LE(0, 10);
		local.writeUInt32LE(crc, 14);
		local.writeUInt32LE(deflated.length, 18);
		local.writeUInt32LE(data.length, 22);
		local.writeUInt16LE(nameBuf.length, 26);
		local.writeUInt16LE(0, 28);
		const central = Buffer.alloc(46);
		central.writeUInt32LE(0x02014b50, 0);
		central.writeUInt16LE(20, 4);
		central.writeUInt16LE(20, 6);
		central.writeUInt16LE(0, 8);
		central.writeUInt16LE(8, 10);
		central.writeUInt32LE(0, 12);
		central.writeUInt32LE(crc, 16);
		central.writeUInt32LE(deflated.length, 20);
		central.writeUInt32LE(data.length, 24);
		central.writeUInt16LE(nameBuf.length, 28);
		central.writeUInt32LE(offset, 42);
		locals.push(local, nameBuf, deflated);
		centrals.push(central, nameBuf);
		offset += local.length + nameBuf.length + deflated.length;
	}
	const centralBuf = Buffer.concat(centrals);
	const end = Buffer.alloc(22);
	end.writeUInt32LE(0x06054b50, 0);
	end.writeUInt16LE(Object.keys(files).length, 8);
	end.writeUInt16LE(Object.keys(files).length, 10);
	end.writeUInt32LE(centralBuf.length, 12);
	end.writeUInt32LE(offset, 16);
	return Buffer.concat([...locals, centralBuf, end]);
}

const xmlEscape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function docx(job) {
	const para = (text, bold) =>
		`<w:p><w:r>${bold ? '<w:rPr><w:b/></w:rPr>' : ''}<w:t xml:space="preserve">${xmlEscape(text)}</w:t></w:r></w:p>`;
	const body = [para(job.title, true)];
	for (const p of paragraphs(job)) {
		if (p.heading) body.push(para(p.heading, true));
		body.push(para(p.text, false));
	}
	return zip({
		'[Content_Types].xml':
			'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
		'_rels/.rels':
			'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
		'word/document.xml': `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body.join('')}</w:body></w:document>`,
	});
}

const RENDERERS = { srt, vtt, txt, json, docx };
const FORMATS = Object.keys(CONTENT_TYPES);

/** @returns {Buffer} */
function render(job, format) {
	const out = RENDERERS[format](job);
	return Buffer.isBuffer(out) ? out : Buffer.from(out, 'utf8');
}

module.exports = { render, FORMATS, CONTENT_TYPES, RENDERERS, crc32 };
