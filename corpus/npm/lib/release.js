'use strict'
// What every wrapper of a released npm limiter shares: the release's own packages, and
// limiters/js's runner (policy, line protocol) connected with the release's own ioredis.
//
// Environment, beside the runner's: CORPUS_NPM_DIR, the directory the release is installed in
// (corpus/install.py's `.corpus/npm/<package>-<version>`), absolute or relative to the project.
// Unset, or holding no installed release: one line on stderr, exit code 2.
//
// load(name)      the package `name` as the release's directory resolves it
// start(options)  the runner's start (limiters/js/lib/runner.js) on the release's ioredis
const fs = require('node:fs')
const path = require('node:path')
const { createRequire } = require('node:module')
const runner = require('../../../limiters/js/lib/runner')

const ROOT = path.resolve(__dirname, '..', '..', '..')

function releaseRequire() {
  const program = path.basename(require.main.filename)
  const directory = process.env.CORPUS_NPM_DIR
  const manifest = directory && path.resolve(ROOT, directory, 'package.json')
  if (!manifest || !fs.existsSync(manifest)) {
    const why = directory ? `no release is installed in ${directory} (make corpus)` : 'CORPUS_NPM_DIR is not set'
    process.stderr.write(`${program}: ${why}\n`)
    process.exit(2)
  }
  return createRequire(manifest)
}

const load = releaseRequire()
const start = (options) => runner.start({ ...options, Redis: load('ioredis') })

module.exports = { load, start }
