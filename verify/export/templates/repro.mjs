// Reproduce the kernel's failure with Dawn in Node (npm install webgpu@{{ webgpu_version }}): node repro.mjs
// Reads repro.json beside this file. Set WEBGPU_MODULE to the package's index.js when it is not
// installed where Node finds it from here. Exit 0 PASS, 1 FAIL or ERROR, 2 when it cannot run here
// (no adapter, a missing feature, npm webgpu not installed, repro.json missing or damaged: one line
// saying what is missing and what to install). Only exit 1 means the bug reproduces, so nothing that
// keeps the reproduction from running may end in an uncaught error, which Node exits 1 with.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const INSTALL = 'npm install webgpu@{{ webgpu_version }}';
const AGAIN = "copy the reproduction's folder again (repro.json comes with repro.mjs)";
// Dawn asks Vulkan for features Debian 12's Mesa 22.3 lavapipe lacks (dynamic indexing of uniform arrays),
// so on a machine without a GPU it needs Mesa 24 or later, or SwiftShader.
const NO_ADAPTER = 'no WebGPU adapter: Dawn (npm webgpu) found no Vulkan driver it accepts (it refuses Mesa 22.3, ' +
  "Debian 12's lavapipe); install Mesa 25 (Debian 12: apt install -t bookworm-backports mesa-vulkan-drivers) or run " +
  "with VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (Debian's chromium: SwiftShader, no shader-f16)";

/** Exit 2 ("cannot run here") with one line: never exit 1, which would say the bug reproduces. */
function cannotRun(reason) {
  console.error(`SKIP  cannot run here: ${reason}`);
  process.exit(2);
}

const firstLine = error => String((error && error.message) || error).trim().split('\n')[0];

const modulePath = process.env.WEBGPU_MODULE;
let webgpu;
try {
  webgpu = await import(modulePath ? pathToFileURL(modulePath).href : 'webgpu');
} catch (error) {
  if (error && error.code === 'ERR_MODULE_NOT_FOUND') {
    cannotRun(modulePath ? `WEBGPU_MODULE=${modulePath} is not there; point it at npm webgpu's index.js, or ${INSTALL}`
                     : `Node finds no npm webgpu from here; ${INSTALL} (or set WEBGPU_MODULE to its index.js)`);
  }
  cannotRun(`npm webgpu does not load (${firstLine(error)}); ${INSTALL}`);
}
const { create, globals } = webgpu;
Object.assign(globalThis, globals);  // GPUBufferUsage, GPUMapMode, GPUShaderStage

{{ core }}

let text, repro;
try {
  text = readFileSync(new URL('./repro.json', import.meta.url), 'utf8');
} catch (error) {
  cannotRun(error.code === 'ENOENT' ? `repro.json is missing beside repro.mjs; ${AGAIN}`
                                    : `repro.json cannot be read (${firstLine(error)}); ${AGAIN}`);
}
try {
  repro = JSON.parse(text);
} catch (error) {
  cannotRun(`repro.json is not valid JSON (truncated or edited: ${firstLine(error)}); ${AGAIN}`);
}
const problem = await damage(repro);
if (problem) cannotRun(`repro.json is damaged (${problem}); ${AGAIN}`);

let gpu;
try {
  gpu = create([]);
} catch (error) {
  cannotRun(`${NO_ADAPTER} (Dawn: ${firstLine(error)})`);
}
console.log(repro.title);
const result = await reproduce(gpu, repro, { noAdapter: NO_ADAPTER });
for (const line of describe(result)) console.log(line);
const meaning = repro.expect[result.verdict.toLowerCase()];
if (meaning) console.log(meaning);
process.exit({ PASS: 0, FAIL: 1, ERROR: 1 }[result.verdict] ?? 2);
