// The frames verify's Python side and its Node processes exchange (verify/gpu/dawn/process.py),
// for every Node process verify starts (worker.mjs, the ONNX Runtime runner in verify/sources/ort).
//
// A frame, both directions: u32 little-endian header length, the header (UTF-8 JSON), then the
// header's `blobs` (an array of byte lengths) worth of raw bytes, concatenated. Buffer contents
// travel as blobs, never inside the JSON. Requests are handled one at a time, in order, one
// reply each. Requests come on stdin; replies go to the pipe whose descriptor $VERIFY_FRAMES_FD
// names, never to stdout: Dawn prints its warnings to stdout from native code ("Calling
// DispatchWorkgroups with a workgroup count of 0 is unusual."), which in the reply stream made
// the Python side read a warning as a frame length and wait for ever. The process exits when its
// stdin closes: the Python side holds the only write end, so its death (even kill -9) ends this
// process too.

import fs from 'node:fs';

const FRAMES_FD = process.env.VERIFY_FRAMES_FD ? Number(process.env.VERIFY_FRAMES_FD) : null;

/** Write all of `bytes` to the replies' pipe (a blocking descriptor: writeSync may write part). */
function writeAll(bytes) {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(FRAMES_FD, bytes, offset, bytes.length - offset);
    } catch (error) {
      if (error.code === 'EAGAIN') continue;
      process.exit(0); // EPIPE: the Python side is gone
    }
  }
}

/** Write one frame: `header` (its `blobs` field is set here) and the blobs' bytes. */
export function send(header, blobs = []) {
  const json = Buffer.from(JSON.stringify({ ...header, blobs: blobs.map(b => b.length) }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  const frame = Buffer.concat([length, json, ...blobs]);
  if (FRAMES_FD === null) process.stdout.write(frame); // started by hand, without verify's pipe
  else writeAll(frame);
}

/** Call `handle(header, blobs)` (async) for every request frame on stdin, one after another. */
export function serve(handle) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdout.on('error', () => process.exit(0));

  // Chunks are kept as they come and joined once a whole frame is there, so a large upload is
  // copied once rather than once per chunk.
  const chunks = [];
  let buffered = 0;
  let stage = 'length'; // then 'header', then 'body'
  let needed = 4;
  let header = null;
  let queue = Promise.resolve();

  function take(count) {
    const joined = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, buffered);
    chunks.length = 0;
    if (joined.length > count) chunks.push(joined.subarray(count));
    buffered = joined.length - count;
    return joined.subarray(0, count);
  }

  process.stdin.on('data', chunk => {
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= needed) {
      if (stage === 'length') {
        needed = take(4).readUInt32LE(0);
        stage = 'header';
      } else if (stage === 'header') {
        header = JSON.parse(take(needed).toString('utf8'));
        needed = (header.blobs || []).reduce((a, b) => a + b, 0);
        stage = 'body';
      } else {
        const body = take(needed);
        const blobs = [];
        let offset = 0;
        for (const size of header.blobs || []) {
          blobs.push(body.subarray(offset, offset + size));
          offset += size;
        }
        const request = header;
        queue = queue.then(() => handle(request, blobs));
        stage = 'length';
        needed = 4;
      }
    }
  });
}
