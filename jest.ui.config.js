/** The editor suite: n8n 2.41.1's editor in headless Chromium (npm run test:ui; npm run screenshots). */
const e2e = require('./jest.e2e.config.js');

module.exports = {
	...e2e,
	roots: ['<rootDir>/test/ui'],
	testPathIgnorePatterns: ['/node_modules/'],
	testTimeout: 90000,
};
