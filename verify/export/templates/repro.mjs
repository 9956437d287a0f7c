// Reproduce the kernel's failure with Dawn in Node (npm install webgpu): node repro.mjs
// Reads repro.json beside this file. Set WEBGPU_MODULE to the package's index.js when it is not
// installed where Node finds it from here. Exit 0 PASS, 1 FAIL or ERROR, 2 when it cannot run here.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const { create, globals } = await import(process.env.WEBGPU_MODULE ? pathToFileURL(process.env.WEBGPU_MODULE).href : 'webgpu');
Object.assign(globalThis, globals);  // GPUBufferUsage, GPUMapMode, GPUShaderStage

{{ core }}

const repro = JSON.parse(readFileSync(new URL('./repro.json', import.meta.url), 'utf8'));
console.log(repro.title);
const result = await reproduce(create([]), repro);
for (const line of describe(result)) console.log(line);
const meaning = repro.expect[result.verdict.toLowerCase()];
if (meaning) console.log(meaning);
process.exit({ PASS: 0, FAIL: 1, ERROR: 1 }[result.verdict] ?? 2);
