// Keel needs Node >= 22.19 (pi-ai). The pinned `node` devDependency puts Node 22 first on PATH for npm scripts; show it once.
const g = globalThis as { __keelNodeVersionPrinted?: boolean };
if (!g.__keelNodeVersionPrinted && process.env.VITEST_POOL_ID === '1') {
  g.__keelNodeVersionPrinted = true;
  console.log(`[keel] tests run on Node ${process.version}`);
}
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  throw new Error(
    `Keel needs Node >= 22.19, this is ${process.version}: run the tests with \`npm test\` (the pinned node devDependency).`,
  );
}
