// `npm run lint`: n8n's community-node rules (eslint.config.mjs, n8n's own, which its tools read)
// and the house's: a function a reader takes in at once, about a screen.
import config from './eslint.config.mjs';

export default [
	...config,
	{
		files: ['nodes/**/*.ts', 'credentials/**/*.ts'],
		rules: {
			'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
		},
	},
];
