// openapi-typescript (the dashboard's API types) builds its output with TypeScript's JavaScript API
// (ts.factory), which the native TypeScript 7 of this repository does not have: it gets
// TypeScript 5 of its own instead of the workspace's as its peer.
module.exports = {
  hooks: {
    readPackage(pkg) {
      if (pkg.name === 'openapi-typescript') {
        delete pkg.peerDependencies?.typescript;
        pkg.dependencies = { ...pkg.dependencies, typescript: '5.9.3' };
      }
      return pkg;
    },
  },
};
