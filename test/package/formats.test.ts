// The caption formats come from one list (model/types.ts CAPTION_FORMATS): the panel's options, the
// files' types and their text in the JSON are derived from it; what cannot import it (the sandbox's
// renderers, the docs' sentences) is held to it here, so that a format added in one place and not
// the others fails.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { formatsField } from '../../nodes/Captioning/captions';
import { CAPTION_FORMATS } from '../../nodes/Captioning/model/types';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const sandbox = require('../../sandbox/captions') as {
	FORMATS: string[];
	CONTENT_TYPES: Record<string, string>;
	RENDERERS: Record<string, unknown>;
};

const formats = Object.keys(CAPTION_FORMATS).sort();
const root = path.resolve(__dirname, '../..');

test('the panel offers every format, by its label', () => {
	const options = formatsField.options as Array<{ name: string; value: string }>;
	expect(options.map((o) => o.value).sort()).toEqual(formats);
	for (const o of options)
		expect(o.name).toBe(CAPTION_FORMATS[o.value as keyof typeof CAPTION_FORMATS].label);
});

test('the sandbox renders every format, with the type the node gives the file', () => {
	expect([...sandbox.FORMATS].sort()).toEqual(formats);
	expect(Object.keys(sandbox.RENDERERS).sort()).toEqual(formats);
	for (const [format, { mimeType }] of Object.entries(CAPTION_FORMATS)) {
		expect(sandbox.CONTENT_TYPES[format].split(';')[0]).toBe(mimeType);
	}
});

test.each([
	['README.md', /SRT, VTT, TXT, DOCX or JSON/],
	['README.md', /downloads SRT, VTT, TXT, DOCX and\/or JSON/],
])('%s names every format (%s)', (file, sentence) => {
	const line = readFileSync(path.join(root, file), 'utf8')
		.split('\n')
		.find((l) => sentence.test(l));
	expect(line).toBeDefined();
	const named = [...(line ?? '').matchAll(/\b(SRT|VTT|TXT|DOCX|JSON)\b/g)]
		.map((m) => m[1].toLowerCase())
		.sort();
	expect(named).toEqual(formats);
});

test('docs/operations.md names every format with the type the node gives the file', () => {
	const text = readFileSync(path.join(root, 'docs/operations.md'), 'utf8').replace(/\n/g, ' ');
	const sentence = /Formats: (.*?)\. File names/.exec(text)?.[1] ?? '';
	const named = [...sentence.matchAll(/\b([A-Z]+) \(`([^`]+)`\)/g)].map((m) => [
		m[1].toLowerCase(),
		m[2],
	]);
	expect(named.map(([format]) => format).sort()).toEqual(formats);
	for (const [format, mimeType] of named)
		expect(mimeType).toBe(CAPTION_FORMATS[format as keyof typeof CAPTION_FORMATS].mimeType);
});

test('README names the text formats Item JSON (Text) puts in the JSON', () => {
	const line = readFileSync(path.join(root, 'README.md'), 'utf8')
		.split('\n')
		.find((l) => l.startsWith('**Item JSON (Text)** puts'));
	const named = [...(line ?? '').matchAll(/`(?:caption_text)?\.(\w+)`/g)].map((m) => m[1]).sort();
	const text = Object.entries(CAPTION_FORMATS)
		.filter(([, f]) => f.json === 'text')
		.map(([format]) => format)
		.sort();
	expect(named).toEqual(text);
});
