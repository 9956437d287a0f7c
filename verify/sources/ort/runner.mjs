// ONNX Runtime Web's WebGPU execution provider on Dawn (npm `webgpu`, dawn.node), driven by
// verify's Python OrtRuntime (verify/sources/ort/runtime.py): requests on stdin, replies on a pipe
// of their own, in the binary frames of verify/gpu/dawn/frames.mjs. Requests, answered in order:
//
//   {op: "open", adapter}          -> {adapter: {vendor, architecture, description, features} | null, ort_version}
//                                     (ORT is loaded only where Dawn offers an adapter)
//   {op: "session", id, options?} + [model]
//                                  -> {inputs, outputs, adapter: {vendor, architecture, description, features,
//                                      device_features, device_limits}}
//       `options`: the WebGPU execution provider's options (e.g. enableMatmulFp32Accumulation: true,
//       onnxruntime-web 1.31.1 and later), given as `{name: 'webgpu', ...options}`; without it, 'webgpu'.
//   {op: "run", session, feeds: [{name, type, dims, alias?}], snapshots} + one blob per feed
//       -> {outputs: [{name, type, dims}], programs: [{label, entry_point, wgsl}],
//           dispatches: [{program, workgroups, bindings: [{group, binding, buffer, offset, size, usage, blob}]}]}
//          + the outputs' bytes, then (snapshots) the bytes of every binding of every dispatch
//       A feed with `alias` (an output's name) is uploaded into a GPU buffer of ORT's device and
//       that one buffer is bound as the input and as the named output (ORT's I/O binding of a
//       pre-allocated output): a kernel that checks whether its input and output are one buffer
//       (GroupQueryAttention's past_key/present_key, PagedAttention's key_cache/key_cache_out)
//       then takes its in-place path. The output's bytes are read back from that buffer.
//   {op: "release", session}       -> {}
//
// A failure replies {error: {kind, message}}. What a run records, and how:
//   - programs: GPUDevice.createShaderModule and create(Async)ComputePipeline are wrapped, so each
//     pipeline is known by its module's label (ORT names modules after its programs) and WGSL;
//   - dispatches: GPUComputePassEncoder.setPipeline/setBindGroup/dispatchWorkgroups are wrapped,
//     with createBindGroup recording which buffer ranges each bind group holds;
//   - snapshots: when asked, every bound range is copied into a mappable buffer right after its
//     compute pass ends (GPUComputePassEncoder.end is wrapped; createBuffer adds COPY_SRC to every
//     buffer that can have it, which WebGPU allows for any storage or uniform buffer). A pass
//     holds dispatches of one node, which do not write what an earlier dispatch of the pass
//     reads, so each copy holds what its dispatch read or wrote.
//
// Two shims make ORT run in Node: `navigator.gpu` is a Dawn instance, and GPUQueue.writeBuffer
// copies views of ORT's shared wasm memory (dawn.node refuses SharedArrayBuffer views). ORT's
// 27 MB wasm must not be compiled by V8's optimizing tier in the background: until that ends
// (35-55 s on two cores), Dawn's asynchronous pipeline creations do not complete. The Python side
// starts Node with --liftoff-only, which keeps V8 to its baseline compiler.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { send, serve } from '../../gpu/dawn/frames.mjs';
import '../../gpu/dawn/polling.mjs'; // before dawn.node's first wait

const { create, globals } = await import(pathToFileURL(process.env.VERIFY_WEBGPU_MODULE).href);
Object.assign(globalThis, globals);

// -- recording ------------------------------------------------------------------------------------
const modules = new WeakMap();   // GPUShaderModule -> {label, wgsl}
const pipelines = new WeakMap(); // GPUComputePipeline -> program index
const programs = [];             // {label, entry_point, wgsl}, in order of creation
const buffers = new WeakMap();   // GPUBuffer -> {id, size, usage}
const bindGroups = new WeakMap(); // GPUBindGroup -> [{binding, buffer, offset, size}]
const passes = new WeakMap();    // GPUComputePassEncoder -> {encoder, pipeline, groups, dispatches}
let nextBuffer = 1;
let device = null;
let adapterInfo = null;
const recording = { dispatches: null, snapshots: false };

function wrap(proto, name, replacement) {
  const original = proto[name];
  proto[name] = function (...args) { return replacement.call(this, original, ...args); };
  return original;
}

const rawCreateBuffer = wrap(GPUDevice.prototype, 'createBuffer', function (original, descriptor) {
  const mappable = descriptor.usage & (GPUBufferUsage.MAP_READ | GPUBufferUsage.MAP_WRITE);
  const usage = mappable ? descriptor.usage : descriptor.usage | GPUBufferUsage.COPY_SRC;
  const buffer = original.call(this, { ...descriptor, usage });
  buffers.set(buffer, { id: nextBuffer++, size: Number(descriptor.size), usage: descriptor.usage });
  return buffer;
});

wrap(GPUDevice.prototype, 'createShaderModule', function (original, descriptor) {
  const module = original.call(this, descriptor);
  modules.set(module, { label: descriptor.label ?? '', wgsl: descriptor.code });
  return module;
});

function remember(pipeline, descriptor) {
  const module = modules.get(descriptor.compute.module) ?? { label: '', wgsl: '' };
  programs.push({ label: module.label, entry_point: descriptor.compute.entryPoint ?? '', wgsl: module.wgsl });
  pipelines.set(pipeline, programs.length - 1);
  return pipeline;
}
wrap(GPUDevice.prototype, 'createComputePipeline', function (original, descriptor) {
  return remember(original.call(this, descriptor), descriptor);
});
wrap(GPUDevice.prototype, 'createComputePipelineAsync', function (original, descriptor) {
  return original.call(this, descriptor).then(pipeline => remember(pipeline, descriptor));
});

wrap(GPUDevice.prototype, 'createBindGroup', function (original, descriptor) {
  const group = original.call(this, descriptor);
  bindGroups.set(group, descriptor.entries.map(entry => {
    const resource = entry.resource;
    const buffer = resource instanceof GPUBuffer ? resource : resource.buffer;
    return { binding: entry.binding, buffer, offset: Number(resource.offset ?? 0),
             size: resource.size === undefined ? undefined : Number(resource.size) };
  }));
  return group;
});

wrap(GPUQueue.prototype, 'writeBuffer', function (original, buffer, offset, data, ...rest) {
  const shared = typeof SharedArrayBuffer !== 'undefined' && data?.buffer instanceof SharedArrayBuffer;
  return original.call(this, buffer, offset, shared ? data.slice() : data, ...rest);
});

wrap(GPUCommandEncoder.prototype, 'beginComputePass', function (original, descriptor) {
  const pass = original.call(this, descriptor);
  passes.set(pass, { encoder: this, pipeline: null, groups: [], dispatches: [] });
  return pass;
});
wrap(GPUComputePassEncoder.prototype, 'setPipeline', function (original, pipeline) {
  passes.get(this).pipeline = pipeline;
  return original.call(this, pipeline);
});
wrap(GPUComputePassEncoder.prototype, 'setBindGroup', function (original, index, group, ...offsets) {
  if (offsets.length && offsets[0]?.length) throw new Error('dynamic bind group offsets are not recorded');
  passes.get(this).groups[index] = group;
  return original.call(this, index, group, ...offsets);
});
wrap(GPUComputePassEncoder.prototype, 'dispatchWorkgroups', function (original, x, y = 1, z = 1) {
  const state = passes.get(this);
  state.dispatches.push({ pipeline: state.pipeline, groups: [...state.groups], workgroups: [x, y, z] });
  return original.call(this, x, y, z);
});
wrap(GPUComputePassEncoder.prototype, 'end', function (original) {
  const result = original.call(this);
  const state = passes.get(this);
  if (recording.dispatches) {
    for (const dispatch of state.dispatches) recording.dispatches.push(record(dispatch, state.encoder));
  }
  return result;
});

/** A dispatch as the reply carries it; with snapshots, a copy of every bound range is encoded now. */
function record(dispatch, encoder) {
  const bindings = [];
  dispatch.groups.forEach((group, index) => {
    for (const entry of bindGroups.get(group) ?? []) {
      const info = buffers.get(entry.buffer);
      const size = entry.size ?? info.size - entry.offset;
      const binding = { group: index, binding: entry.binding, buffer: info.id, offset: entry.offset, size,
                        usage: info.usage, staging: null };
      if (recording.snapshots) {
        binding.staging = rawCreateBuffer.call(device, { size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        encoder.copyBufferToBuffer(entry.buffer, entry.offset, binding.staging, 0, size);
      }
      bindings.push(binding);
    }
  });
  return { program: pipelines.get(dispatch.pipeline) ?? -1, workgroups: dispatch.workgroups, bindings };
}

const LIMITS = ['maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxStorageBufferBindingSize',
                'maxComputeWorkgroupsPerDimension'];
wrap(GPUAdapter.prototype, 'requestDevice', async function (original, descriptor) {
  device = await original.call(this, descriptor);
  adapterInfo = {
    vendor: this.info.vendor, architecture: this.info.architecture, description: this.info.description,
    features: [...this.features].sort(), device_features: [...device.features].sort(),
    // The limits ORT asked for: some of its programs size their tiles from them (e.g. the
    // decode attention's m_tile from maxComputeWorkgroupStorageSize).
    device_limits: Object.fromEntries(LIMITS.map(name => [name, device.limits[name]])),
  };
  return device;
});

// -- ONNX Runtime -----------------------------------------------------------------------------------
let ort = null;
const sessions = new Map();
const BYTES = { float32: Float32Array, float16: Uint16Array, uint8: Uint8Array, int8: Int8Array, int32: Int32Array, int64: BigInt64Array };

async function open(request) {
  // Node 21+ defines globalThis.navigator as a getter (no `gpu`), so it is replaced, not assigned.
  Object.defineProperty(globalThis, 'navigator', {
    value: { gpu: create(request.adapter ? [`adapter=${request.adapter}`] : []) },
    configurable: true, writable: true,
  });
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { adapter: null };
  const info = adapter.info;
  const dist = process.env.VERIFY_ORT_DIST;
  ort = await import(pathToFileURL(path.join(dist, 'ort.webgpu.mjs')).href);
  ort.env.logLevel = 'error';
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = pathToFileURL(dist + path.sep).href;
  ort.env.wasm.wasmBinary = fs.readFileSync(path.join(dist, 'ort-wasm-simd-threaded.asyncify.wasm'));
  return {
    ort_version: ort.env.versions.web,
    adapter: { vendor: info.vendor, architecture: info.architecture, description: info.description,
               features: [...adapter.features].sort() },
  };
}

async function session(request, blobs) {
  // No fallback to ORT's CPU provider: a node the WebGPU provider refuses fails the session.
  const provider = request.options ? { name: 'webgpu', ...request.options } : 'webgpu';
  const created = await ort.InferenceSession.create(blobs[0], {
    executionProviders: [provider], extra: { session: { disable_cpu_ep_fallback: '1' } },
  });
  sessions.set(request.id, created);
  return { reply: { inputs: created.inputNames, outputs: created.outputNames, adapter: adapterInfo } };
}

function tensorData(type, blob) {
  const Kind = BYTES[type];
  if (!Kind) throw new Error(`tensor type ${type} is not supported`);
  const copy = new Uint8Array(blob); // aligned for the typed array
  return new Kind(copy.buffer, 0, copy.byteLength / Kind.BYTES_PER_ELEMENT);
}

async function run(request, blobs) {
  const created = sessions.get(request.session);
  if (!created) throw new Error(`no session ${request.session}`);
  const feeds = {};
  const aliased = new Map(); // output name -> {buffer, type, dims, bytes}
  request.feeds.forEach((feed, i) => {
    if (feed.alias) {
      const gpu = uploadAliased(feed, blobs[i]);
      aliased.set(feed.alias, gpu);
      feeds[feed.name] = gpu.tensor;
    } else {
      feeds[feed.name] = new ort.Tensor(feed.type, tensorData(feed.type, blobs[i]), feed.dims);
    }
  });
  // With aliases, every output is fetched explicitly: the aliased ones into their input's
  // buffer, the others where ORT puts them (null).
  const fetches = aliased.size ? Object.fromEntries(created.outputNames.map(name => [name, aliased.get(name)?.tensor ?? null])) : undefined;
  recording.dispatches = [];
  recording.snapshots = Boolean(request.snapshots);
  let results;
  const dispatches = recording.dispatches;
  try {
    results = fetches ? await created.run(feeds, fetches) : await created.run(feeds);
  } catch (error) {
    dispatches.forEach(d => d.bindings.forEach(b => b.staging?.destroy()));
    aliased.forEach(gpu => gpu.buffer.destroy());
    throw error;
  } finally {
    recording.snapshots = false;
    recording.dispatches = null;
  }
  const outputs = [];
  const out = [];
  for (const name of created.outputNames) {
    const gpu = aliased.get(name);
    if (gpu) {
      outputs.push({ name, type: gpu.type, dims: gpu.dims });
      out.push(await readBuffer(gpu.buffer, gpu.bytes));
      gpu.buffer.destroy();
      continue;
    }
    const tensor = results[name];
    const data = tensor.data;
    outputs.push({ name, type: tensor.type, dims: tensor.dims });
    out.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  // The programs dispatched, numbered in order of first dispatch for the reply.
  const used = [...new Set(dispatches.map(d => d.program).filter(p => p >= 0))];
  const number = new Map(used.map((p, i) => [p, i]));
  for (const dispatch of dispatches) {
    dispatch.program = number.get(dispatch.program) ?? -1;
    for (const binding of dispatch.bindings) {
      if (binding.staging) {
        await binding.staging.mapAsync(GPUMapMode.READ);
        binding.blob = out.length;
        out.push(Buffer.from(binding.staging.getMappedRange().slice(0)));
        binding.staging.destroy();
      } else {
        binding.blob = null;
      }
      delete binding.staging;
    }
  }
  return { reply: { outputs, programs: used.map(p => programs[p]), dispatches }, blobs: out };
}

/** A feed uploaded into a buffer of ORT's device, as an ORT tensor on that buffer. */
function uploadAliased(feed, blob) {
  if (!device) throw new Error('no WebGPU device yet: a session must be created before a run');
  const bytes = blob.length;
  const buffer = device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 16) * 16),
                                       usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(buffer, 0, new Uint8Array(blob));
  const tensor = ort.Tensor.fromGpuBuffer(buffer, { dataType: feed.type, dims: feed.dims });
  return { buffer, tensor, type: feed.type, dims: feed.dims, bytes };
}

/** The first `bytes` bytes of a buffer (every buffer here has COPY_SRC). */
async function readBuffer(buffer, bytes) {
  const size = Math.ceil(bytes / 4) * 4;
  const staging = rawCreateBuffer.call(device, { size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const data = Buffer.from(staging.getMappedRange().slice(0, bytes));
  staging.destroy();
  return data;
}

async function release(request) {
  const created = sessions.get(request.session);
  sessions.delete(request.session);
  if (created) await created.release();
  return {};
}

// -- requests -----------------------------------------------------------------------------------------
const HANDLERS = { open, session, run, release };

async function handle(header, blobs) {
  try {
    if (header.op !== 'open' && !ort) throw new Error('ONNX Runtime is not loaded (send "open" first)');
    const result = await HANDLERS[header.op](header, blobs);
    if (result.reply) send(result.reply, result.blobs ?? []);
    else send(result);
  } catch (error) {
    const message = String(error && error.message || error);
    const kind = /ERROR_CODE|ERROR_MESSAGE|failed to call Ort/.test(message) ? 'ort' : 'internal';
    send({ error: { kind, message: kind === 'ort' ? message : String(error && error.stack || error) } });
  }
}

serve(handle);
