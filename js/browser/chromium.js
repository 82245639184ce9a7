// How headless Chromium is started on a software adapter: the flags and feature levels in
// src/webgpu_torch/tools/web/chromium.json, which the Python side (webgpu_torch/tools/headless.py) reads too.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { REPO } from '../testkit/io.js';

/** @type {{common: string[], adapters: Record<string, {flags: string[], featureLevel: 'core' | 'compatibility'}>}} */
const CONFIG = JSON.parse(readFileSync(join(REPO, 'src', 'webgpu_torch', 'tools', 'web', 'chromium.json'), 'utf8'));

/** The adapters a run may ask for, each with its flags and the feature level its page requests. */
export const ADAPTERS = CONFIG.adapters;

/**
 * The command line for headless Chromium showing `url` on `adapter`, with a profile folder of its own.
 * @param {string} adapter a key of ADAPTERS
 * @param {string} profile
 * @param {string} url
 */
export function chromiumArgs(adapter, profile, url) {
  return [...CONFIG.common, ...ADAPTERS[adapter].flags, `--user-data-dir=${profile}`, url];
}
