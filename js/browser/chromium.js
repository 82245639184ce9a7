// How headless Chromium is started on a software adapter, for the browser tests, the page's test and the
// side-by-side benchmark.

/**
 * The adapters a test may ask for: Chromium's flags for each and the feature level its page requests.
 * `lavapipe`: Chromium blocks Mesa's software Vulkan driver for core WebGPU; Dawn's OpenGL ES backend over
 * ANGLE on Vulkan reaches it in compatibility mode, which offers no optional features and WebGPU's
 * compatibility defaults unless the device requests the adapter's limits.
 * @type {Record<string, {flags: string[], featureLevel: 'core' | 'compatibility'}>}
 */
export const ADAPTERS = {
  swiftshader: { flags: ['--enable-features=Vulkan'], featureLevel: 'core' },
  lavapipe: {
    flags: ['--enable-features=Vulkan', '--use-vulkan=native', '--use-angle=vulkan', '--use-webgpu-adapter=opengles'],
    featureLevel: 'compatibility',
  },
};

/** Nothing reaches out of 127.0.0.1: no updates, metrics, sync or first-run pages. */
const QUIET = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-default-apps',
  '--no-first-run', '--no-default-browser-check', '--metrics-recording-only', '--disable-breakpad'];

/**
 * The command line for headless Chromium showing `url` on `adapter`, with a profile folder of its own.
 * @param {string} adapter a key of ADAPTERS
 * @param {string} profile
 * @param {string} url
 * @param {string[]} [extra] more flags
 */
export function chromiumArgs(adapter, profile, url, extra = []) {
  return ['--headless=new', '--no-sandbox', '--enable-unsafe-webgpu', ...QUIET, ...ADAPTERS[adapter].flags,
    `--user-data-dir=${profile}`, ...extra, url];
}
