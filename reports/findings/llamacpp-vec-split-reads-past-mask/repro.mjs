// Reproduce the kernel's failure with Dawn in Node (npm install webgpu@0.6.2): node repro.mjs
// Reads repro.json beside this file. Set WEBGPU_MODULE to the package's index.js when it is not
// installed where Node finds it from here. Exit 0 PASS, 1 FAIL or ERROR, 2 when it cannot run here
// (no adapter, a missing feature, npm webgpu not installed, repro.json missing or damaged: one line
// saying what is missing and what to install). Only exit 1 means the bug reproduces, so nothing that
// keeps the reproduction from running may end in an uncaught error, which Node exits 1 with.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const INSTALL = 'npm install webgpu@0.6.2';
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

// ---- The reproduction: create the buffers, dispatch, read the outputs back, compare. ----------------
// The same code runs in a browser (navigator.gpu) and in Node (npm `webgpu`).

/** Bytes of a blob: base64 of gzip. */
async function unpack(text) {
  const packed = Uint8Array.from(atob(text), c => c.charCodeAt(0));
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** IEEE half -> number (for f16 outputs). */
function half(bits) {
  const sign = bits & 0x8000 ? -1 : 1, exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** Bytes per element of each output type (WebGPU has no 64-bit types). */
const WIDTH = { f16: 2, f32: 4, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4 };

/** The elements of an output, as numbers, from the bytes read back. */
function decode(bytes, dtype, count) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = {
    f16: i => half(view.getUint16(2 * i, true)), f32: i => view.getFloat32(4 * i, true),
    i8: i => view.getInt8(i), u8: i => view.getUint8(i),
    i16: i => view.getInt16(2 * i, true), u16: i => view.getUint16(2 * i, true),
    i32: i => view.getInt32(4 * i, true), u32: i => view.getUint32(4 * i, true),
  }[dtype];
  return Array.from({ length: count }, (_, i) => read(i));
}

/**
 * What makes a reproduction document unusable ('' if nothing): a missing or mistyped field, a blob that is
 * not base64 of gzip or not as long as its shape says, an index to no buffer or pipeline. A script checks
 * this before it runs anything, so a damaged repro.json is "cannot run here", never a failure half way.
 */
export async function damage(repro) {
  const format = 'webgpu-kernel-repro/1';
  if (!repro || typeof repro !== 'object' || repro.format !== format) return `not a ${format} document`;
  const fields = { title: 'string', expect: 'object', features: 'array', limits: 'object', pipelines: 'array',
                   buffers: 'array', dispatches: 'array', outputs: 'array' };
  for (const [name, kind] of Object.entries(fields)) {
    const value = repro[name];
    const ok = kind === 'array' ? Array.isArray(value)
      : typeof value === kind && value !== null && !Array.isArray(value);
    if (!ok) return `'${name}' is missing or not a${kind === 'array' ? 'n' : ''} ${kind}`;
  }
  const count = n => Number.isInteger(n) && n >= 0;
  try {
    for (const p of repro.pipelines) {
      if (typeof p.wgsl !== 'string' || typeof p.entryPoint !== 'string' ||
          !p.bindings.every(([b, type]) => count(b) && typeof type === 'string')) {
        return 'a pipeline without its WGSL, entry point or bindings';
      }
    }
    const sizes = [];
    for (const b of repro.buffers) {
      if (!['storage', 'read-only-storage', 'uniform'].includes(b.usage)) {
        return `buffer '${b.name}' has the usage '${b.usage}'`;
      }
      sizes.push((await unpack(b.data)).byteLength);
      if (b.guard && b.guard[0] + b.guard[1] > sizes[sizes.length - 1]) {
        return `buffer '${b.name}' is shorter than its guard's end`;
      }
    }
    for (const d of repro.dispatches) {
      if (!(d.pipeline >= 0 && d.pipeline < repro.pipelines.length) ||
          !d.bindings.every(([, index]) => index >= 0 && index < repro.buffers.length)) {
        return 'a dispatch names a pipeline or buffer that is not there';
      }
      if (d.workgroups.length !== 3 || !d.workgroups.every(count)) {
        return "a dispatch's workgroup counts are not three counts";
      }
    }
    for (const o of repro.outputs) {
      if (!o.shape.every(count)) return `output '${o.name}' has the shape ${JSON.stringify(o.shape)}`;
      const elements = o.shape.reduce((a, b) => a * b, 1);
      if (!(o.dtype in WIDTH) || !(o.buffer >= 0 && o.buffer < repro.buffers.length)) {
        return `output '${o.name}' is '${o.dtype}' in buffer ${o.buffer}`;
      }
      if (sizes[o.buffer] < elements * WIDTH[o.dtype]) return `output '${o.name}' does not fit its buffer`;
      for (const key of ['lo', 'hi', 'budget', 'exact']) {
        if (o[key] === null || o[key] === undefined) {
          if (key === 'lo' || key === 'budget') return `output '${o.name}' has no ${key}`;
          continue;
        }
        if ((await unpack(o[key])).byteLength !== elements * (key === 'exact' ? 1 : 8)) {
          return `output '${o.name}': ${key} does not hold ${elements} elements`;
        }
      }
    }
  } catch (error) {
    return `${(error && error.name) || 'Error'}: ${(error && error.message) || error}`;
  }
  return '';
}

/** (i, j, ...) of flat element `flat` in an array of `shape`. */
function unravel(flat, shape) {
  const index = [];
  for (let axis = shape.length - 1; axis >= 0; axis--) { index.unshift(flat % shape[axis]); flat = Math.floor(flat / shape[axis]); }
  return index;
}

/**
 * One output against its acceptable values. An element v passes where lo - budget <= v <= hi + budget
 * (its error is its distance from [lo, hi], and err/budget <= 1); NaN never passes where a number is
 * expected, nor anything where the budget is NaN; where `exact` is set it must equal the reference bit
 * for bit (NaN matching NaN).
 */
export async function judge(output, bytes) {
  const count = output.shape.reduce((a, b) => a * b, 1);
  const got = decode(bytes, output.dtype, count);
  const lo = new Float64Array((await unpack(output.lo)).buffer);
  const hi = output.hi ? new Float64Array((await unpack(output.hi)).buffer) : lo;
  const budget = new Float64Array((await unpack(output.budget)).buffer);
  const exact = output.exact ? await unpack(output.exact) : null;
  const elements = [];
  let failing = 0, nan = 0, exactMismatches = 0;
  for (let i = 0; i < count; i++) {
    const v = got[i], reference = (lo[i] + hi[i]) / 2;
    let error = Math.max(lo[i] - v, v - hi[i], 0);
    if (!Number.isFinite(v) && (v === lo[i] || v === hi[i])) error = 0;  // the expected infinity
    if (Number.isNaN(error)) error = Infinity;
    let ratio = error === 0 ? 0 : error / budget[i];
    if (Number.isNaN(ratio) || Number.isNaN(budget[i])) ratio = Infinity;  // a NaN budget licenses nothing
    if (Number.isNaN(v) && !Number.isNaN(reference)) nan++;
    if (exact && exact[i]) {
      const same = v === reference || (Number.isNaN(v) && Number.isNaN(reference));
      if (!same) exactMismatches++;
      ratio = same ? 0 : Infinity;
    }
    if (ratio > 1) failing++;
    elements.push({ i, v, ratio });
  }
  elements.sort((a, b) => b.ratio - a.ratio || a.i - b.i);
  const worst = elements.slice(0, 8).filter(e => e.ratio > 0).map(({ i, v, ratio }) => ({
    index: unravel(i, output.shape), got: v, lo: lo[i], hi: hi[i], budget: budget[i], ratio }));
  return { name: output.name, elements: count, failing, nan, exactMismatches,
           maxRatio: elements.length ? elements[0].ratio : 0, worst };
}

const SUBGROUP_PROBE = `enable subgroups;
@group(0) @binding(0) var<storage, read_write> size_out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32) {
  if (i == 0u) { size_out[0] = n; }
}`;

/** One submission: a compute pass per dispatch, then a copy of every buffer read back; their bytes. */
async function submit(device, pipelines, buffers, dispatches) {
  const encoder = device.createCommandEncoder();
  for (const d of dispatches) {
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipelines[d.pipeline]);
    pass.setBindGroup(0, device.createBindGroup({
      layout: pipelines[d.pipeline].getBindGroupLayout(0),  // every binding the WGSL declares, used or not
      entries: d.bindings.map(([binding, index]) => ({ binding, resource: { buffer: buffers[index].gpu } })),
    }));
    pass.dispatchWorkgroups(...d.workgroups);
    pass.end();
  }
  const staging = buffers.map(b => {
    if (!b.readback) return null;
    const target = device.createBuffer({ size: b.gpu.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.copyBufferToBuffer(b.gpu, 0, target, 0, b.gpu.size);
    return target;
  });
  device.queue.submit([encoder.finish()]);
  const out = [];
  for (const target of staging) {
    if (!target) { out.push(null); continue; }
    await target.mapAsync(GPUMapMode.READ);
    out.push(new Uint8Array(target.getMappedRange().slice(0)));
    target.unmap();
  }
  return out;
}

/**
 * A compute pipeline, or the compiler's messages. Its bind group layout lists every binding the WGSL
 * declares ([binding, buffer type]), as the kernel's host code binds them, not only those it uses.
 */
async function compile(device, code, entryPoint, bindings) {
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const layout = bindings ? device.createPipelineLayout({ bindGroupLayouts: [device.createBindGroupLayout({
    entries: bindings.map(([binding, type]) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
  })] }) : 'auto';
  const pipeline = device.createComputePipeline({ layout, compute: { module, entryPoint } });
  const error = await device.popErrorScope();
  const messages = info.messages.filter(m => m.type === 'error').map(m => `line ${m.lineNum}:${m.linePos}: ${m.message}`);
  if (error || messages.length) return { error: messages.join('\n') || error.message };
  return { pipeline };
}

/**
 * Run the reproduction on `gpu` (navigator.gpu, or npm webgpu's). `options.noAdapter`: what to say where
 * there is no adapter (the Node script names the drivers Dawn accepts and how to get one).
 */
export async function reproduce(gpu, repro, options = {}) {
  const result = { verdict: 'SKIP', reason: '', adapter: null, subgroupSize: null, outputs: [], guards: [] };
  let adapter = null, refusal = '';
  try {
    adapter = gpu && await gpu.requestAdapter();
  } catch (error) {
    refusal = ` (${(error && error.message) || error})`;
  }
  if (!adapter) { result.reason = (options.noAdapter || 'no WebGPU adapter') + refusal; return result; }
  const info = adapter.info || {};
  result.adapter = { vendor: info.vendor, architecture: info.architecture, device: info.device,
                     description: info.description, subgroupMinSize: info.subgroupMinSize,
                     subgroupMaxSize: info.subgroupMaxSize };
  const lacking = repro.features.filter(f => !adapter.features.has(f));
  if (lacking.length) { result.reason = `the adapter lacks ${lacking.join(', ')}, which the kernel needs`; return result; }
  const requiredLimits = {};
  for (const [name, value] of Object.entries(repro.limits)) {
    if (name in adapter.limits) requiredLimits[name] = Math.min(value, adapter.limits[name]);
  }
  const features = [...repro.features];
  if (adapter.features.has('subgroups') && !features.includes('subgroups')) features.push('subgroups');
  let device;
  try {
    device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  } catch (error) {
    result.reason = `the adapter refused a device: ${error.message || error}`;
    return result;
  }
  if (device.features.has('subgroups')) {  // the subgroup size this adapter runs a 64-wide workgroup with
    const probe = await compile(device, SUBGROUP_PROBE, 'main');
    if (probe.pipeline) {
      const size = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      const [bytes] = await submit(device, [probe.pipeline], [{ gpu: size, readback: 4 }],
                                   [{ pipeline: 0, bindings: [[0, 0]], workgroups: [1, 1, 1] }]);
      result.subgroupSize = new Uint32Array(bytes.buffer)[0];
    }
  }

  // The kernel: compile, create every buffer from its recorded bytes, dispatch as recorded.
  const pipelines = [];
  for (const p of repro.pipelines) {
    const compiled = await compile(device, p.wgsl, p.entryPoint, p.bindings);
    if (compiled.error) { result.verdict = 'ERROR'; result.reason = `the WGSL does not compile:\n${compiled.error}`; return result; }
    pipelines.push(compiled.pipeline);
  }
  const buffers = [];
  for (const b of repro.buffers) {
    const data = await unpack(b.data);
    const usage = { 'storage': GPUBufferUsage.STORAGE, 'read-only-storage': GPUBufferUsage.STORAGE,
                    'uniform': GPUBufferUsage.UNIFORM }[b.usage] | GPUBufferUsage.COPY_SRC;
    const gpuBuffer = device.createBuffer({ size: data.byteLength, usage, mappedAtCreation: true });
    new Uint8Array(gpuBuffer.getMappedRange()).set(data);
    gpuBuffer.unmap();
    buffers.push({ gpu: gpuBuffer, data, readback: b.readback, guard: b.guard, name: b.name });
  }
  device.pushErrorScope('validation');
  const read = await submit(device, pipelines, buffers, repro.dispatches);
  const refused = await device.popErrorScope();
  if (refused) { result.verdict = 'ERROR'; result.reason = `the dispatch was refused: ${refused.message}`; return result; }

  // Compare: every judged output, and the guard bytes past the end of every buffer read back.
  for (const output of repro.outputs) result.outputs.push(await judge(output, read[output.buffer]));
  buffers.forEach((b, index) => {
    if (!b.guard) return;
    const [offset, length] = b.guard;
    const intact = read[index].slice(offset, offset + length).every((byte, k) => byte === b.data[offset + k]);
    const named = repro.outputs.find(o => o.buffer === index);
    result.guards.push({ buffer: b.name, output: named ? named.name : b.name, intact });
  });
  const failed = result.outputs.filter(o => o.failing || o.nan || o.exactMismatches);
  const overrun = result.guards.filter(g => !g.intact);
  result.verdict = failed.length || overrun.length ? 'FAIL' : 'PASS';
  result.reason = [...overrun.map(g => `${g.output}: wrote past the end of the buffer`),
                   ...failed.map(o => `${o.name}: ${o.failing}/${o.elements} elements over budget` +
                                      (o.nan ? `; ${o.nan} NaN` : '') +
                                      (o.exactMismatches ? `; ${o.exactMismatches} not bit-exact where required` : ''))
                  ].join('; ') || 'every output within its budget';
  device.destroy();
  return result;
}

/** The result as lines of text (the Node script prints them; the page shows them too). */
export function describe(result) {
  const lines = [`${result.verdict}  ${result.reason}`];
  if (result.adapter) {
    const a = result.adapter;
    lines.push(`adapter: ${[a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || '?'}` +
               `; subgroup size ${result.subgroupSize ?? 'n/a'}` +
               (a.subgroupMinSize ? ` (adapter: ${a.subgroupMinSize}-${a.subgroupMaxSize})` : ''));
  }
  for (const o of result.outputs) {
    lines.push(`  ${o.name}: ${o.failing}/${o.elements} over budget, ${o.nan} NaN, max err/budget ${fmt(o.maxRatio)}`);
    for (const w of o.worst.slice(0, 5)) {
      const expected = w.lo === w.hi ? fmt(w.lo) : `[${fmt(w.lo)}, ${fmt(w.hi)}]`;
      lines.push(`    ${o.name}[${w.index.join(', ')}] = ${fmt(w.got)}, expected ${expected} ± ${fmt(w.budget)} (err/budget ${fmt(w.ratio)})`);
    }
  }
  return lines;
}

export function fmt(x) {
  if (typeof x !== 'number') return String(x);
  if (!Number.isFinite(x)) return String(x);
  return Math.abs(x) !== 0 && (Math.abs(x) < 1e-4 || Math.abs(x) >= 1e6) ? x.toExponential(4) : String(+x.toPrecision(7));
}


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
