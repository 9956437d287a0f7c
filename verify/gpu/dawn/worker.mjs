// Dawn (npm `webgpu`, dawn.node) driven by verify's Python DawnDevice (requests on stdin, replies on the
// pipe frames.mjs names), in the binary frames of frames.mjs. Requests are answered in order, one reply each:
//   {op: "adapters"}                        -> {adapters: [info...]}
//   {op: "open", adapter, features, limits} -> {adapter: info, features, limits}
//   {op: "compile", id, wgsl, entry_point, bindings: [{binding, type}]}
//                                           -> {} | {error: {kind: "compile", message, messages}}
//   {op: "run", buffers: [{size, usage, readback}], dispatches: [{pipeline, bindings, workgroups}],
//    timestamps}  + one blob per buffer     -> {timing, gpu_ns}  + one blob per readback buffer
// A failure replies {error: {kind, message}}. The process exits when stdin closes (frames.mjs).
import { pathToFileURL } from 'node:url';

import { send, serve } from './frames.mjs';
import './polling.mjs'; // before dawn.node's first wait

// The Python side finds the pinned package (verify/gpu/dawn/environment.py) and names its entry file.
const { create, globals } = await import(pathToFileURL(process.env.VERIFY_WEBGPU_MODULE).href);
Object.assign(globalThis, globals);

const USAGE = {
  'storage': GPUBufferUsage.STORAGE,
  'read-only-storage': GPUBufferUsage.STORAGE,
  'uniform': GPUBufferUsage.UNIFORM,
};
const NO_ADAPTER = '\u0001'; // matches no adapter's name: Dawn then lists every adapter it found
// Extra dawn.node flags, ';'-separated (e.g. 'enable-dawn-features=dump_shaders'), for diagnosis only.
// Always: Dawn's timestamp quantization off. It rounds timestamps to 65536 ns (a browser's
// mitigation of timing attacks), so a dispatch shorter than that measured 0 or 65.5 us; verify
// measures kernels, and its devices are no browser's.
const FLAGS = withDisabled((process.env.VERIFY_DAWN_FLAGS || '').split(';').filter(Boolean), 'timestamp_quantization');

function withDisabled(flags, feature) {
  const at = flags.findIndex((flag) => flag.startsWith('disable-dawn-features='));
  if (at < 0) return [...flags, `disable-dawn-features=${feature}`];
  return flags.map((flag, i) => (i === at ? `${flag},${feature}` : flag));
}

let device = null;
let instance = null; // the GPU object (a Dawn instance) the device came from: it must outlive the device
const pipelines = new Map();

// -- adapters -----------------------------------------------------------------------------------
/** The adapters Dawn accepts under this process's Vulkan drivers, as [{backend, name}]. */
async function adapterNames() {
  try {
    await create([...FLAGS, `adapter=${NO_ADAPTER}`]).requestAdapter();
    return []; // resolved (with null): Dawn found no adapter at all
  } catch (error) {
    const found = [];
    for (const match of String(error).matchAll(/\* backend: '(\w+)', name: '(.*)'$/gm)) {
      found.push({ backend: match[1], name: match[2] });
    }
    return found;
  }
}

function describe(adapter, named) {
  const info = adapter.info;
  const limits = {};
  for (const key in adapter.limits) limits[key] = adapter.limits[key];
  return {
    name: named.name,
    backend: named.backend,
    vendor: info.vendor,
    architecture: info.architecture,
    description: info.description,
    fallback: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
    subgroup_min_size: info.subgroupMinSize ?? null,
    subgroup_max_size: info.subgroupMaxSize ?? null,
    features: [...adapter.features].sort(),
    limits,
  };
}

async function listAdapters() {
  const out = [];
  for (const named of await adapterNames()) {
    const gpu = create([...FLAGS, `adapter=${named.name}`]);
    const adapter = await gpu.requestAdapter();
    if (adapter) out.push({ gpu, adapter, info: describe(adapter, named) });
  }
  return out;
}

async function open(request) {
  const candidates = await listAdapters();
  const wanted = (request.adapter || '').toLowerCase();
  const matching = candidates.filter(({ info }) => !wanted ||
    `${info.name} ${info.vendor} ${info.backend} ${info.description}`.toLowerCase().includes(wanted));
  if (!matching.length) {
    const found = candidates.map(({ info }) => info.name).join(', ') || 'none';
    return { error: { kind: 'no_adapter', message: `no Dawn adapter matches ${JSON.stringify(request.adapter)}; found: ${found}` } };
  }
  // Best first: a real GPU before a CPU fallback, then the adapter with more of the features asked for.
  const score = ({ info }) => (info.fallback ? 0 : 100) + request.features.filter(f => info.features.includes(f)).length;
  const { gpu, adapter, info } = matching.reduce((best, c) => (score(c) > score(best) ? c : best));
  instance = gpu;
  const features = request.features.filter(f => adapter.features.has(f));
  const limits = {};
  for (const [key, value] of Object.entries(request.limits)) limits[key] = Math.min(value, adapter.limits[key] ?? value);
  emptyPool(); // the buffers of a device this process opened before
  device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits: limits });
  device.lost.then(lost => {
    if (lost.reason !== 'destroyed') process.stderr.write(`dawn: device lost (${lost.reason}): ${lost.message}\n`);
  });
  device.onuncapturederror = event => process.stderr.write(`dawn: uncaptured error: ${event.error.message}\n`);
  return { adapter: info, features, limits };
}

// -- pipelines ----------------------------------------------------------------------------------
/** Tint's own diagnostic from an error-scope message, without Dawn's call-site trailer. */
function tintText(message) {
  return message.replace(/^Error while parsing WGSL: /, '').replace(/\n+ - While [\s\S]*$/, '').trim();
}

async function compile(request) {
  const scopes = ['validation', 'internal', 'out-of-memory'];
  scopes.forEach(scope => device.pushErrorScope(scope));
  const module = device.createShaderModule({ code: request.wgsl });
  const info = await module.getCompilationInfo();
  const layout = device.createBindGroupLayout({
    entries: request.bindings.map(b => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })),
  });
  const pipeline = device.createComputePipeline({
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: { module, entryPoint: request.entry_point },
  });
  const errors = [];
  for (const _ of scopes) {
    const error = await device.popErrorScope();
    if (error) errors.push(tintText(error.message));
  }
  const messages = info.messages.map(m => ({ type: m.type, line: m.lineNum, column: m.linePos, message: m.message }));
  if (errors.length || messages.some(m => m.type === 'error')) {
    return { error: { kind: 'compile', message: errors.join('\n') || messages.map(m => m.message).join('\n'), messages } };
  }
  pipelines.set(request.id, { pipeline, layout });
  return { warnings: messages };
}

// -- buffers kept between runs ------------------------------------------------------------------
// A run's buffers go back to a pool, by size and usage, for the next run to take and overwrite
// whole (queue.writeBuffer of every byte; a readback's staging buffer is written whole by its
// copy). Creating and destroying every buffer of every run cost little on one process, but on an
// NVIDIA GPU with 16 such processes at once a run's upload took 10-25 times as long (each
// buffer's memory allocated, mapped and freed through the driver); runs of one kernel reuse the
// same sizes, so the pool holds a handful of buffers. POOL_BYTES bounds what it keeps.
const POOL_BYTES = 256 * 1024 * 1024;
let pool = new Map(); // `${size}/${usage}` -> [GPUBuffer]
let pooledBytes = 0;

function takeBuffer(size, usage) {
  const spare = pool.get(`${size}/${usage}`);
  if (spare && spare.length) {
    pooledBytes -= size;
    return spare.pop();
  }
  return device.createBuffer({ size, usage });
}

function returnBuffer(buffer) {
  if (pooledBytes + buffer.size > POOL_BYTES) {
    buffer.destroy();
    return;
  }
  const key = `${buffer.size}/${buffer.usage}`;
  if (!pool.has(key)) pool.set(key, []);
  pool.get(key).push(buffer);
  pooledBytes += buffer.size;
}

function emptyPool() {
  for (const spare of pool.values()) spare.forEach(buffer => buffer.destroy());
  pool = new Map();
  pooledBytes = 0;
}

// -- runs ---------------------------------------------------------------------------------------
async function run(request, blobs) {
  const scopes = ['validation', 'internal', 'out-of-memory'];
  scopes.forEach(scope => device.pushErrorScope(scope));
  let t = performance.now();
  const timing = {};
  const buffers = request.buffers.map((spec, i) => {
    const usage = USAGE[spec.usage] | GPUBufferUsage.COPY_DST | (spec.readback ? GPUBufferUsage.COPY_SRC : 0);
    const buffer = takeBuffer(spec.size, usage);
    device.queue.writeBuffer(buffer, 0, blobs[i]);
    return buffer;
  });
  timing.upload = performance.now() - t;

  // One submission: every dispatch (one compute pass each), then copies of the buffers to read
  // back and the resolved timestamps into mappable staging buffers.
  t = performance.now();
  const encoder = device.createCommandEncoder();
  const passes = request.dispatches.length;
  const querySet = request.timestamps ? device.createQuerySet({ type: 'timestamp', count: 2 * passes }) : null;
  request.dispatches.forEach((dispatch, i) => {
    const { pipeline, layout } = pipelines.get(dispatch.pipeline);
    const group = device.createBindGroup({
      layout,
      entries: dispatch.bindings.map(([binding, index]) => ({ binding, resource: { buffer: buffers[index] } })),
    });
    const pass = encoder.beginComputePass(querySet
      ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } } : {});
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(...dispatch.workgroups);
    pass.end();
  });
  const staging = [];
  request.buffers.forEach((spec, i) => {
    if (!spec.readback) return;
    const target = takeBuffer(spec.size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    encoder.copyBufferToBuffer(buffers[i], 0, target, 0, spec.size);
    staging.push(target);
  });
  let stamps = null;
  if (querySet) {
    const resolved = device.createBuffer({ size: 16 * passes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    stamps = device.createBuffer({ size: 16 * passes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.resolveQuerySet(querySet, 0, 2 * passes, resolved, 0);
    encoder.copyBufferToBuffer(resolved, 0, stamps, 0, 16 * passes);
  }
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  timing.dispatch = performance.now() - t;

  t = performance.now();
  const errors = [];
  for (const _ of scopes) {
    const error = await device.popErrorScope();
    if (error) errors.push(error.message);
  }
  if (errors.length) {
    buffers.concat(staging).forEach(b => b.destroy());
    return { error: { kind: 'run', message: errors.join('\n') } };
  }
  const out = [];
  for (const target of staging) {
    await target.mapAsync(GPUMapMode.READ);
    out.push(Buffer.from(target.getMappedRange().slice(0)));
    target.unmap();
    returnBuffer(target);
  }
  let gpuNs = null;
  if (stamps) {
    await stamps.mapAsync(GPUMapMode.READ);
    const ticks = new BigUint64Array(stamps.getMappedRange());
    gpuNs = request.dispatches.map((_, i) => Number(ticks[2 * i + 1] - ticks[2 * i]));
    stamps.destroy();
    querySet.destroy();
  }
  buffers.forEach(returnBuffer);
  timing.readback = performance.now() - t;
  return { reply: { timing, gpu_ns: gpuNs }, blobs: out };
}

// -- requests -----------------------------------------------------------------------------------
const HANDLERS = {
  adapters: async () => ({ adapters: (await listAdapters()).map(({ info }) => info) }),
  open,
  compile,
  run,
};

async function handle(header, blobs) {
  try {
    if (header.op !== 'adapters' && header.op !== 'open' && !device) throw new Error('no device is open');
    const result = await HANDLERS[header.op](header, blobs);
    if (result.blobs) send(result.reply, result.blobs);
    else send(result);
  } catch (error) {
    send({ error: { kind: 'internal', message: String(error && error.stack || error) } });
  }
}

serve(handle);
